//! Baton's gRPC contract, `baton.v1` (`proto/baton/v1/`): the generated messages and the client
//! and server stubs of AgentService, LeaderService, ClaimService, ScheduleService and
//! AdminService. What a Rust worker needs on the wire; the helpers are in `baton-client`.

pub mod codec;

tonic::include_proto!("baton.v1");

/// The encoded descriptors of `baton.v1`, served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("baton_descriptor");
