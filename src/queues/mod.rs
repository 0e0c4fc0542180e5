//! Queues: agents registered, leased, heartbeated and completed (AgentService and the Session
//! stream), the index of active queues, per-queue and per-key limits, and the sweeps' store.

pub mod active;
pub(crate) mod classify;
pub(crate) mod cron;
pub mod expiry;
pub(crate) mod leases;
pub(crate) mod limits;
pub(crate) mod parents;
pub(crate) mod records;
pub(crate) mod service;
pub(crate) mod session;
pub(crate) mod shards;
pub mod signals;
pub mod store;
pub mod sweep;
#[cfg(test)]
mod tests;
pub mod wait;
pub(crate) mod watch;
