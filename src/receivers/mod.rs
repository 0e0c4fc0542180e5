//! Receivers: durable scheduled messages (ScheduleService) and their delivery to receivers,
//! unary or on the Receive stream.

pub mod deliveries;
pub mod receive;
pub mod service;
pub mod shards;
pub mod store;
