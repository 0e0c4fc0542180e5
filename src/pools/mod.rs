//! Pools: resources offered, claimed, returned and dead-lettered (ClaimService).

pub(crate) mod records;
pub(crate) mod service;
pub(crate) mod shards;
pub mod store;
pub(crate) mod wait;
