//! Baton's gRPC contract, `baton.v1` (`proto/baton/v1/`): the generated messages and the client
//! and server stubs of AgentService, LeaderService, ClaimService, ScheduleService and
//! AdminService. What a Rust worker needs on the wire; the helpers are in `baton-client`.
//! Every message names its protobuf type (`prost::Name`, e.g. `GetHealthResponse::full_name()`
//! is `baton.v1.GetHealthResponse`), so it can be found in [`FILE_DESCRIPTOR_SET`] by name.

pub mod codec;

tonic::include_proto!("baton.v1");

/// The encoded descriptors of `baton.v1`, served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("baton_descriptor");

/// The leadership rule of `leader.proto` (RenewResponse.renew_in and step_down_in), in one
/// place: the server answers it on Campaign and Renew, and Baton's own background leadership
/// follows it.
pub mod leadership {
    use std::time::Duration;

    /// When a leader renews and when it steps down, both measured from the moment it sent the
    /// call that was answered.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Rule {
        /// Send the next Renew this long after the answered call was sent.
        pub renew_in: Duration,
        /// Stop acting as leader this long after the answered call was sent, unless a later
        /// Renew (sent before then) has answered.
        pub step_down_in: Duration,
    }

    /// The rule for a term of `ttl`: renew at a third, step down at two thirds.
    pub fn rule(ttl: Duration) -> Rule {
        Rule { renew_in: ttl / 3, step_down_in: ttl * 2 / 3 }
    }
}
