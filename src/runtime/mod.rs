//! What runs beside the calls: sweeps, leadership of
//! background duties, the monitor and the embedded Redis.

pub mod embedded;
pub mod leadership;
pub(crate) mod monitor;
pub(crate) mod names;
pub(crate) mod sweep;
pub mod trim;

#[cfg(test)]
mod tests;
