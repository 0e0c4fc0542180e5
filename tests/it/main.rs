//! Baton's integration tests, one binary: a module per area, all sharing the harness in
//! `common` (a private redis-server per test, Baton servers on loopback ports bound to port 0).
//! The tests run as threads of one process, so a test must not change what the others share:
//! environment variables, the current directory, signal dispositions, global subscribers and
//! recorders. Run one area with `cargo test --test it agent::`, one test by its name.

mod common;

mod active;
mod admin;
mod agent;
mod cancel;
mod cascade;
mod claim;
mod cli;
mod client;
mod cluster;
mod console;
mod cron;
mod dedup_modes;
mod deploy;
mod elections;
mod expiry;
mod flow;
mod flow_faults;
mod flows;
mod groups;
mod hardening;
mod idempotency;
mod keda;
mod key_limits;
mod keyed;
mod layers;
mod leader;
mod lua_headers;
mod malformed;
mod overload;
mod policy;
mod race;
mod receive;
mod safety;
mod scale;
mod schedule;
mod security;
mod serve;
mod session;
mod sharding;
mod signals;
mod steps;
mod trace;
mod validation;
mod watch;
mod web;
