//! How callers reach Baton beyond the plain gRPC services: gRPC-Web and the JSON mapping on the
//! gRPC port, the web console, KEDA's external scaler, TLS, and the layer that puts an
//! ErrorInfo on every status sent.

pub(crate) mod console;
pub mod keda;
pub(crate) mod status;
pub(crate) mod tls;
pub mod web;
