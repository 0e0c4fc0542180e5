//! Flows: dependencies between agents, batches and their callbacks, kept finishes (results),
//! and Await (served by AgentService).

pub mod batches;
pub(crate) mod records;
pub(crate) mod service;
pub mod store;
