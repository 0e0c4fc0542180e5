//! Receivers: durable scheduled messages (ScheduleService) and their delivery to receivers,
//! unary or on the Receive stream.

pub(crate) mod deliveries;
pub(crate) mod receive;
pub(crate) mod records;
pub(crate) mod service;
pub(crate) mod shards;
pub mod store;
