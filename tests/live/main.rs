//! Tests against real throwaway MariaDB servers (and perf, a pty, TLS) that each test starts for itself.
//! One binary per kind (ripgrep style, `autotests = false`): each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod cli_flags;
mod cli_outputs;
mod cli_profile;
mod cli_rough_edges;
mod conn_optfiles;
mod doctor_first_screen;
mod doctor_fleet;
mod doctor_mariadb;
mod doctor_origin_mariadb;
mod doctor_rules_mariadb;
mod doctor_took_mariadb;
mod journal_sessions;
mod profile_instances;
mod profile_mariadb;
mod profile_waits_mariadb;
mod progress_pty;
mod restore_list_mariadb;
mod rt_follow_mariadb;
mod rt_idle_mariadb;
mod rt_mariadb;
mod safety_actors;
mod safety_hangs;
mod safety_mariadb;
mod sql_guard_mariadb;
mod sweep_api;
mod sweep_client;
mod sweep_mariadb;
mod sweep_tls;
mod tune_mariadb;
mod watch_bursts;
mod watch_debris;
mod watch_mariadb;
