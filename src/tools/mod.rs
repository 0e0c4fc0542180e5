//! The operator commands of the `baton` binary and the development certificates.

pub mod cli;
pub mod devcerts;
