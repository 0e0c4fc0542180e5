//! Gives the allocator's free memory back to the system once a burst of streams has opened, or
//! ended.
//!
//! Every stream starts an acquire as soon as it opens, so a burst of opens (a fleet starting, or
//! reconnecting after a replica restarted) has a round in flight per stream at once. When those
//! rounds end, glibc's allocator keeps the memory they freed: an idle stream then costs about
//! half as much RSS again as it holds (ARCHITECTURE.md, "An idle Session stream"). So once at least
//! [`BURST`] streams have opened and none has for [`QUIET`], `baton serve` asks glibc to return
//! its free pages (`malloc_trim`). Opens are rare events next to calls, so a trim (it walks the
//! heap, holding each arena's lock in turn: milliseconds at hundreds of MB) never runs while
//! streams keep opening, nor more than once per burst.
//!
//! The same holds when a burst of streams ends (a flood of Observe streams closing, a fleet
//! going away): what they held is free in the allocator, and kept there, until a trim.
//!
//! A stream counts itself when it opens and when it ends (`rpc::opens::Counted`); the binary
//! runs [`run`].

use std::time::Duration;

use crate::rpc::opens::OPENS;

/// How many streams must have opened for a trim to be worth it.
pub const BURST: u64 = 256;
/// How long no stream may open before the trim: the burst is over.
pub const QUIET: Duration = Duration::from_secs(1);

/// The process's trims, for as long as it runs: each on a blocking thread, so no call waits
/// behind the walk of the heap on a runtime thread.
pub async fn run() {
    OPENS
        .after_bursts(BURST, QUIET, || {
            tokio::task::spawn_blocking(|| {
                let released = trim();
                tracing::debug!(released, "a burst of streams opened; the allocator's free memory given back");
            });
        })
        .await
}

/// Returns the allocator's free pages to the system: whether any was (glibc only; elsewhere
/// the allocator decides, and this does nothing).
fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes a size and touches only the allocator's own state, under
        // its locks; it is safe to call from any thread at any time.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}
