//! Baton: a coordination service for polyglot worker fleets. Workers call it over gRPC; Baton
//! alone owns the state in Redis and changes it only through atomic Lua scripts.
//!
//! # Layout
//!
//! - [`server`]: assembles a replica (store, services, health, reflection, shutdown).
//! - [`service`]: the gRPC services; thin: validate, call the store, map errors. Generated
//!   proto types ([`pb`]) stop here.
//! - [`dispatch`]: long-poll Acquire and waiting Campaign, woken by timers on Redis scores and
//!   by pub/sub.
//! - [`leadership`]: elections held by a background task, for duties that run on one replica.
//! - [`store`]: the only code that talks to Redis: keys, connections, the script manager, one
//!   method per state transition.
//! - [`sweeper`]: zombie and orphan sweeps, on the replica elected for them.
//! - [`breaker`]: the dispatch and write-back circuit breakers.
//! - [`health`]: per-queue and per-pool health, graded by thresholds.
//! - [`purge`]: the auto-purge of stale entries.
//! - [`monitor`]: the periodic health summary and watchdog signals.
//! - [`embedded`]: the embedded default, a supervised private redis-server.
//! - [`auth`], [`tls`]: who may call what; serving over TLS.
//! - [`web`]: gRPC-Web and the JSON mapping of the unary RPCs on the gRPC port, through the
//!   same stack as gRPC.
//! - [`console`]: the web console, whose API runs the services in-process behind [`auth`];
//!   [`latency`]: the per-method latency it charts, recorded by every RPC; [`workers`]: the
//!   open Session streams and long polls it lists.
//! - [`cli`]: the operator commands of the `baton` binary (gRPC through [`client`]).
//! - [`config`], [`error`], [`telemetry`]: configuration layering, the one error type and its
//!   gRPC mapping, logs and metrics; [`status`]: the layer that puts an ErrorInfo on every
//!   status sent (deadlines, tonic's own statuses).
//!
//! The stores: [`store`] is the core every domain store is built over (`store::Core`: the
//! connection, the script manager, the breakers, the keys, the policy, the registries and the
//! shard counts; it imports no domain). Each domain folder holds its own store over it —
//! `queues::store::Queues` (agents, the active index, limits, sweeps; built over `Flows`),
//! `flows::store::Flows`, `pools::store::Pools`, `receivers::store::Receivers`,
//! `elections::store::Elections`, and `admin::store::Admin` (dead letters, purges, health,
//! over the queues, pools and receivers stores) — and its service holds that store only.
//! [`server`] builds them once (`server::Stores`) and hands each service and background task
//! the ones it uses. A domain store's methods take a source's logical name and route to its
//! shards through one private per-shard layer (`store::shards::Shard`), so every operation
//! has one public name.
//!
//! The wire contract is the `baton-proto` crate ([`pb`]); Rust workers depend on `baton-client`
//! ([`client`]) only.
//!
//! Lua scripts live in `lua/` (one per transition, `verbNoun-N.lua` with N KEYS; typed in the
//! domain folders `lua/<domain>/`, see `store::scripts::ScriptCall`); protos in
//! `proto/baton/v1/`.

pub mod admin;
pub mod build_info;
pub mod config;
pub mod edge;
pub mod elections;
pub mod error;
pub mod flows;
pub mod pools;
pub mod queues;
pub mod receivers;
pub mod rpc;
pub mod runtime;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod trace;

/// Generated messages and stubs of KEDA's external scaler contract (`proto/keda`, by build.rs),
/// served by `service::keda`; a leaf, so the auth and web layers can name its methods.
pub mod keda_pb {
    tonic::include_proto!("externalscaler");

    /// The encoded descriptors of `externalscaler`, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("keda_descriptor");
}

/// Generated protobuf types and gRPC stubs of `baton.v1` (the `baton-proto` crate).
pub use baton_proto as pb;

/// The Rust client and its helpers (the `baton-client` crate), for tests and tools.
pub use baton_client as client;
