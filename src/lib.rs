//! Baton: a coordination service for polyglot worker fleets. Workers call it over gRPC; Baton
//! alone owns the state in Redis and changes it only through atomic Lua scripts.
#![warn(unreachable_pub)]
//!
//! # Layout
//!
//! A module or item is `pub(crate)` unless the binary, the bench or the integration tests reach
//! it: `unreachable_pub` warns of any other `pub`, and the build's clippy step refuses warnings.
//!
//! Rooms from the top down; a room uses only itself and the rooms below it
//! (`tests/it/layers.rs` checks it, ARCHITECTURE.md draws it):
//!
//! - [`server`]: assembles a replica (the stores, the services, health, reflection, shutdown).
//! - [`edge`]: how callers reach Baton beyond the plain services: gRPC-Web and JSON on the gRPC
//!   port (`edge::web`), the web console, KEDA's scaler, TLS, the ErrorInfo layer; [`tools`]: the
//!   operator commands of the `baton` binary (gRPC through [`client`]) and development
//!   certificates; [`telemetry`]: logs and the metrics listener.
//! - [`runtime`]: what runs beside the calls: the sweeps (on the replica elected for them),
//!   the monitor, background leadership, the embedded redis-server.
//! - The domains, each a folder with its service(s) and its store: [`admin`] (health, purge,
//!   dead letters, limits of any source), [`receivers`], [`queues`], [`flows`], [`pools`],
//!   [`elections`]. A service is thin: validate, call its store, map errors; generated proto
//!   types ([`pb`]) stop there. Long polls live in their domain (`queues::wait`,
//!   `pools::wait`, `elections::wait`).
//! - [`rpc`]: what every service shares: who may call what (`rpc::auth`, `rpc::scopes`), input
//!   rules, admission, the open worker connections, per-method latency, observing a call.
//! - [`store`]: the store core, the only code below the domain stores that talks to Redis:
//!   connections, typed script calls, breakers, keys, wake-ups (pub/sub), shards.
//! - [`config`], [`error`], [`trace`], [`build_info`]: configuration layering, the one error
//!   type and its gRPC mapping, traces, build facts.
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
//! # The public API
//!
//! What the binary, the bench and the integration tests use, and nothing else: [`config`]
//! (configuration, and `config::token_hash` / `config::new_token` for API tokens), [`server`]
//! (`server::run`, `server::run_with_console`: a replica in process), `runtime::embedded` (the
//! embedded redis-server), `tools::devcerts` (development certificates), [`keda_pb`] (KEDA's
//! scaler contract, as a client too), [`error`] (what `server::run` returns), [`pb`] and
//! [`client`]. The bench also reaches below gRPC, to measure Redis doing Baton's work with no
//! server: `store` (keys, `store::scripts::SCRIPTS` and `script_name`, the core) and
//! `queues::store`. The integration tests reach Baton through gRPC only.
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
pub mod keda_pb;
pub mod pools;
pub mod queues;
pub mod receivers;
pub mod rpc;
pub mod runtime;
pub mod server;
pub mod store;
pub mod telemetry;
#[cfg(test)]
mod testing;
pub mod tools;
pub mod trace;

/// Generated protobuf types and gRPC stubs of `baton.v1` (the `baton-proto` crate).
pub use baton_proto as pb;

/// The Rust client and its helpers (the `baton-client` crate), for tests and tools.
pub use baton_client as client;
