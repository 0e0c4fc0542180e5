//! Admission control: when this replica already has as much new work in progress as
//! `limits.max_inflight_work` allows, a new Acquire or Register is shed at once with
//! RESOURCE_EXHAUSTED (reason OVERLOADED) and a pushback hint (`google.rpc.RetryInfo` and
//! `grpc-retry-pushback-ms`), instead of queueing behind the others. Heartbeat, Complete,
//! Release and session completions are never shed: work already held keeps being served, so a
//! flood of new work cannot make a worker lose the leases it holds.
//!
//! A unary Acquire (no wait) and a Register hold their place for the whole call; a long poll is
//! admitted or shed when it arrives and does not hold a place while it waits.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{config::Limits, error::Error};

/// This replica's places for new work. Cheap to clone (the places are shared).
#[derive(Clone)]
pub(crate) struct Admission {
    places: Option<Arc<Semaphore>>,
    pushback_ms: u64,
}

/// A place held; given back when dropped.
pub(crate) struct Admitted(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Admission {
    pub(crate) fn new(limits: &Limits) -> Self {
        let places =
            (limits.max_inflight_work > 0).then(|| Arc::new(Semaphore::new(limits.max_inflight_work as usize)));
        Self { places, pushback_ms: limits.overload_pushback_ms }
    }

    /// A place for one call of `rpc`, or OVERLOADED with a pushback hint (jittered by up to
    /// half, so shed callers do not come back in step).
    pub(crate) fn admit(&self, rpc: &'static str) -> Result<Admitted, Error> {
        let Some(places) = &self.places else { return Ok(Admitted(None)) };
        match places.clone().try_acquire_owned() {
            Ok(permit) => Ok(Admitted(Some(permit))),
            Err(_) => {
                metrics::counter!("baton_shed_total", "rpc" => rpc).increment(1);
                let retry_after_ms = self.pushback_ms + rand::random::<u64>() % (self.pushback_ms / 2 + 1);
                Err(Error::Overloaded { rpc, retry_after_ms })
            }
        }
    }
}
