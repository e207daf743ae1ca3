//! Shared helpers for integration tests. Each test file includes this with `mod common;` and
//! uses only what it needs.
#![allow(dead_code)]

pub mod mariadb;
