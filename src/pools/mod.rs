//! Pools: resources offered, claimed, returned and dead-lettered (ClaimService).

pub mod service;
pub mod shards;
pub mod store;
pub mod wait;
