//! Streams opened and ended in this process (Session, Receive, Observe, WatchAgent, Subscribe),
//! for `runtime::trim`: after a burst of opens or of ends, the allocator's free memory goes back
//! to the system. The allocator is the process's, so the count is too; a process that never
//! runs the trim pays one atomic add per stream opened and one per stream ended.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Streams opened or ended since the last trim, and who waits for them.
pub(crate) struct Opens {
    count: AtomicU64,
    notify: Notify,
}

impl Opens {
    pub(crate) const fn new() -> Self {
        Self { count: AtomicU64::new(0), notify: Notify::const_new() }
    }

    /// One stream opened or ended.
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

/// A stream, counted when it opens and again when it ends (dropped): a flood of streams that
/// ends leaves as much memory free in the allocator as it took. The stream's task holds it.
pub(crate) struct Counted(&'static Opens);

impl Counted {
    pub(crate) fn new() -> Self {
        Self::on(&OPENS)
    }

    fn on(opens: &'static Opens) -> Self {
        opens.opened();
        Counted(opens)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.opened();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// A stream counts when it opens and again when it ends: a burst of streams ending (a flood
    /// closing) is followed by a trim as a burst of opens is.
    #[test]
    fn a_stream_counts_when_it_opens_and_when_it_ends() {
        static COUNTED: Opens = Opens::new();
        let streams: Vec<Counted> = (0..3).map(|_| Counted::on(&COUNTED)).collect();
        assert_eq!(COUNTED.count.load(Ordering::Relaxed), 3);
        drop(streams);
        assert_eq!(COUNTED.count.load(Ordering::Relaxed), 6);
    }

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
