//! What runs beside the calls: sweeps, leadership of
//! background duties, the monitor and the embedded Redis.

pub mod embedded;
pub mod leadership;
pub mod monitor;
pub mod sweep;
