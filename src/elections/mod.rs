//! Elections: terms, fenced leadership and its history (LeaderService).

pub(crate) mod service;
pub mod store;
pub mod wait;
