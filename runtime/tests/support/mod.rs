//! Shared helpers for the runtime crate's integration tests (`mod support;`).
#![allow(dead_code)]

pub mod peers;
#[cfg(feature = "redis")]
pub mod redis;
