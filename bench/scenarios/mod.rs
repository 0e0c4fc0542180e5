//! One module per scenario; each starts from an empty Redis and its own Baton, and prints its
//! own tables to stdout as soon as it ends.

pub mod batch;
pub mod blip;
pub mod claims;
pub mod cluster;
pub mod cycles;
pub mod dispatch;
pub mod drain;
pub mod durable;
pub mod flows;
pub mod idle;
pub mod leader;
pub mod measure;
pub mod observe;
pub mod recovery;
pub mod scale;
pub mod scale_sources;
pub mod schedule;
pub mod security;
pub mod sessions;
pub mod shards;
