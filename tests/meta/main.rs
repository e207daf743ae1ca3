//! Tests about the repository itself: the layer rules, the README's facts and examples, the deploy files.
//! One binary per kind (ripgrep style, `autotests = false`): each file below is a module.

#[path = "../common/mod.rs"]
mod common;

mod deploy_dashboard;
mod doc_links;
mod layers;
mod readme_examples;
mod readme_facts;
