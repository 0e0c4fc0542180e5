//! Flows: dependencies between agents, batches and their callbacks, kept finishes (results),
//! and Await (FlowService).

pub mod batches;
pub mod service;
pub mod store;
