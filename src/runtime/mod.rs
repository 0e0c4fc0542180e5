//! What runs beside the calls: sweeps, long-poll dispatch, leadership of
//! background duties, health, auto-purge, the monitor and the embedded Redis.

pub mod dispatch;
pub mod embedded;
pub mod health;
pub mod leadership;
pub mod monitor;
pub mod purge;
pub mod sweep;
