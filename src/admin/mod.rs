//! Admin: the operator's calls on any source (AdminService): health, limits, pause, purge,
//! dead letters.

pub mod service;
pub mod store;
