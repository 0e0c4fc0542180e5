//! What runs beside the calls: sweeps, long-poll dispatch, leadership of
//! background duties, the monitor and the embedded Redis.

pub mod dispatch;
pub mod embedded;
pub mod leadership;
pub mod monitor;
pub mod sweep;
