//! How callers reach Baton: the gRPC plumbing every service shares, validation and scopes,
//! auth and TLS, gRPC-Web and JSON, the console, KEDA's scaler, traces and the per-method
//! latency record.

pub mod auth;
pub mod console;
pub mod grpc;
pub mod keda;
pub mod latency;
pub mod scopes;
pub mod status;
pub mod tls;
pub mod trace;
pub mod validate;
pub mod web;
pub mod workers;
