//! Admin: the operator's calls on any source (AdminService): health (graded by thresholds,
//! also the monitor's), limits, pause, purge (also the sweeper's auto-purge), dead letters.

pub(crate) mod health;
pub(crate) mod purge;
pub(crate) mod service;
pub mod store;
