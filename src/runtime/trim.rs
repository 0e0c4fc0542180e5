//! Gives the allocator's free memory back to the system once a burst of streams has opened.
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
//! The allocator is the process's, so the count of opens is too: a stream counts itself with
//! [`opened`], and the binary runs [`run`] (tests and embedders that never run it pay one atomic
//! add per stream).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use tokio::sync::Notify;

/// How many streams must have opened for a trim to be worth it.
pub const BURST: u64 = 256;
/// How long no stream may open before the trim: the burst is over.
pub const QUIET: Duration = Duration::from_secs(1);

/// Streams opened since the last trim, and who waits for them.
pub struct Opens {
    count: AtomicU64,
    notify: Notify,
}

impl Opens {
    pub const fn new() -> Self {
        Self { count: AtomicU64::new(0), notify: Notify::const_new() }
    }

    /// One stream opened.
    pub fn opened(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.notify.notify_one();
    }

    /// Waits for bursts of opens: after each, once no stream has opened for `quiet`, calls
    /// `trim` if at least `burst` opened since the last call. Runs until dropped.
    pub async fn after_bursts(&self, burst: u64, quiet: Duration, trim: impl Fn()) {
        loop {
            self.notify.notified().await;
            while tokio::time::timeout(quiet, self.notify.notified()).await.is_ok() {}
            if self.count.load(Ordering::Relaxed) >= burst {
                self.count.store(0, Ordering::Relaxed);
                trim();
            }
        }
    }
}

impl Default for Opens {
    fn default() -> Self {
        Self::new()
    }
}

static OPENS: LazyLock<Opens> = LazyLock::new(Opens::new);

/// A stream opened (Session, Receive).
pub fn opened() {
    OPENS.opened();
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// One trim per burst, after the burst: none while streams keep opening, none for a few.
    #[tokio::test(start_paused = true)]
    async fn a_burst_of_opens_is_trimmed_once_it_is_over() {
        let opens = Arc::new(Opens::new());
        let trims = Arc::new(AtomicUsize::new(0));
        let task = {
            let (opens, trims) = (opens.clone(), trims.clone());
            tokio::spawn(async move {
                opens
                    .after_bursts(10, Duration::from_secs(1), || {
                        trims.fetch_add(1, Ordering::SeqCst);
                    })
                    .await
            })
        };
        // A burst of 20, one every 100 ms: never quiet for a second while it lasts.
        for _ in 0..20 {
            opens.opened();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(trims.load(Ordering::SeqCst), 0, "trimmed while streams were still opening");
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert_eq!(trims.load(Ordering::SeqCst), 1, "not trimmed once the burst was over");
        // A few opens are no burst.
        for _ in 0..5 {
            opens.opened();
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(trims.load(Ordering::SeqCst), 1, "trimmed after a few opens");
        // They count toward the next burst.
        for _ in 0..5 {
            opens.opened();
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(trims.load(Ordering::SeqCst), 2, "the opens of two small bursts not counted together");
        task.abort();
    }
}
