//! Tests that need no server: the CLI on fixtures and bad input, the codecs, the renderers, golden text.
//! One binary per kind (ripgrep style, `autotests = false`): each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod cli_doctor;
mod cli_lab;
mod cli_misc;
mod cli_pprof;
mod cli_probe;
mod cli_spin;
mod cli_sweep;
mod cli_waits;
mod cpu_model_paths;
mod files_safety;
mod golden_text;
mod innodb_status_corpus;
mod lab_api;
mod report_browser;
mod report_charts;
mod report_incident;
mod rt_fixtures;
mod rt_midhandshake;
mod spin_props;
mod sql_guard_props;
mod test_seams;
mod watch_http;
mod wire_codec;
