//! Queues: agents registered, leased, heartbeated and completed (AgentService and the Session
//! stream), the index of active queues, per-queue and per-key limits, and the sweeps' store.

pub mod active;
pub mod classify;
pub mod cron;
pub mod leases;
pub mod limits;
pub mod parents;
pub mod service;
pub mod session;
pub mod shards;
pub mod store;
pub mod sweep;
pub mod wait;
