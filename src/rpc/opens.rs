//! Streams opened in this process (Session, Receive), for `runtime::trim`: after a burst of
//! opens, the allocator's free memory goes back to the system. The allocator is the process's,
//! so the count is too; a process that never runs the trim pays one atomic add per stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Streams opened since the last trim, and who waits for them.
pub(crate) struct Opens {
    count: AtomicU64,
    notify: Notify,
}

impl Opens {
    pub(crate) const fn new() -> Self {
        Self { count: AtomicU64::new(0), notify: Notify::const_new() }
    }

    /// One stream opened.
    pub(crate) fn opened(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.notify.notify_one();
    }

    /// Waits for bursts of opens: after each, once no stream has opened for `quiet`, calls
    /// `trim` if at least `burst` opened since the last call. Runs until dropped.
    pub(crate) async fn after_bursts(&self, burst: u64, quiet: Duration, trim: impl Fn()) {
        loop {
            self.notify.notified().await;
            while tokio::time::timeout(quiet, self.notify.notified()).await.is_ok() {}
            let n = self.count.load(Ordering::Relaxed);
            if n >= burst {
                // Less what was counted, not to 0: an open meanwhile counts toward the next.
                self.count.fetch_sub(n, Ordering::Relaxed);
                trim();
            }
        }
    }
}

pub(crate) static OPENS: Opens = Opens::new();

/// A stream opened (Session, Receive).
pub(crate) fn opened() {
    OPENS.opened();
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
