//! Elections: terms, fenced leadership and its history (LeaderService).

pub mod service;
pub mod store;
pub mod wait;
