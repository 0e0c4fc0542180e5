//! The repair of names that are only digits (`orphan_cleanup.remove_numeric_only_agents`):
//! corrupt entries Register refuses, written behind Baton's back. Finding one means reading a
//! queue's whole waiting and working sets, so a repair pass reads a bounded slice of each queue
//! ([`PAGES`] script calls of [`PAGE`] entries) and goes on where the last pass stopped: its
//! cost per pass does not grow with the queue, and a queue of N entries is read whole every
//! N / (PAGES × PAGE) passes (a minute each by default: 5,000 entries a minute). Reading every
//! queue whole at every pass cost a queue of 200,000 waiting agents 1,000 calls of about 350 µs
//! at each pass, and at every replica's first pass, while it was drained.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::Instant;

use crate::error::Result;
use crate::queues::store::Queues;

/// Entries a script call reads (a ZSCAN hint).
pub(crate) const PAGE: u32 = 200;

/// Script calls a queue gets per repair pass.
pub(crate) const PAGES: usize = 25;

/// The sets read, in this order.
const SETS: [&str; 2] = ["waiting", "working"];

/// Queues whose place is remembered at once; past it the places are forgotten (those queues
/// start their reading again).
const MEMO: usize = 10_000;

/// Where each queue's reading goes on: the set (an index in [`SETS`]) and its ZSCAN cursor. A
/// queue read whole has no entry (the next pass starts it again from the beginning).
#[derive(Default)]
pub(crate) struct NameRepair {
    places: Mutex<HashMap<String, (usize, String)>>,
}

impl NameRepair {
    /// Reads the next slice of `queue` (at most [`PAGES`] calls; fewer once `budget` is spent)
    /// and removes the numeric-only names in it; how many. A call that fails loses the place:
    /// the queue is read again from the beginning.
    pub(crate) async fn step(&self, queues: &Queues, queue: &str, budget: Option<Instant>) -> Result<u64> {
        let taken = self.places.lock().expect("name repair lock").remove(queue);
        let (mut set, mut cursor) = taken.unwrap_or((0, "0".to_string()));
        let mut repaired = 0;
        for _ in 0..PAGES {
            let (next, removed) = queues.repair_names(queue, SETS[set], &cursor, PAGE).await?;
            repaired += removed;
            cursor = next;
            if cursor == "0" {
                set += 1;
                if set == SETS.len() {
                    return Ok(repaired);
                }
            }
            if budget.is_some_and(|b| Instant::now() >= b) {
                break;
            }
        }
        let mut places = self.places.lock().expect("name repair lock");
        if places.len() >= MEMO {
            places.clear();
        }
        places.insert(queue.to_string(), (set, cursor));
        Ok(repaired)
    }
}
