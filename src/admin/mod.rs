//! Admin: the operator's calls on any source (AdminService): health (graded by thresholds,
//! also the monitor's), limits, pause, purge (also the sweeper's auto-purge), dead letters.

pub mod health;
pub mod purge;
pub mod service;
pub mod store;
