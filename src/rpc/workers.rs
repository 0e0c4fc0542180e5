//! This replica's open worker connections, for the console's workers view: Session streams and
//! long-poll Acquires (an Acquire with a `wait`), each with its queue, worker id, credit (a
//! session's leases it may still be pushed; a long poll's `max_leases`), when it opened and when
//! the worker last sent something on it.
//!
//! **Per replica, in memory.** A worker connected to another replica is listed by that replica
//! only; nothing here is in Redis, and nothing here is needed by another replica.
//!
//! Bounded and cheap: at most [`MAX`] connections are listed (more are counted, not listed); the
//! registry's lock is taken when a connection opens and when it closes, never per message:
//! credit and last-seen are atomics the connection stores to.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering::Relaxed},
        Arc, LazyLock, Mutex,
    },
    time::{SystemTime, UNIX_EPOCH},
};

/// The most connections listed at once.
pub(crate) const MAX: usize = 10_000;

/// What kind of connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Session,
    LongPoll,
}

impl Kind {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::LongPoll => "long poll",
        }
    }
}

/// One open connection.
#[derive(Debug)]
pub(crate) struct Connection {
    pub kind: Kind,
    pub queue: String,
    pub worker: String,
    /// ms since the Unix epoch, by this replica's clock (shown only; never a deadline).
    pub opened_ms: u64,
    credit: AtomicU64,
    last_seen_ms: AtomicU64,
}

impl Connection {
    pub(crate) fn credit(&self) -> u64 {
        self.credit.load(Relaxed)
    }

    /// When the worker last sent something on it (ms since the Unix epoch).
    pub(crate) fn last_seen_ms(&self) -> u64 {
        self.last_seen_ms.load(Relaxed)
    }
}

static OPEN: LazyLock<Mutex<HashMap<u64, Arc<Connection>>>> = LazyLock::new(Default::default);
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// Connections open beyond [`MAX`]: counted, not listed.
static UNTRACKED: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A connection's place in the registry, removed when dropped (the connection ended).
pub(crate) struct Registration {
    /// None: beyond [`MAX`], counted in [`UNTRACKED`] only.
    id: Option<u64>,
    connection: Arc<Connection>,
}

impl Registration {
    /// The connection's credit is now `credit`.
    pub(crate) fn credit(&self, credit: usize) {
        self.connection.credit.store(credit as u64, Relaxed);
    }

    /// The worker sent something just now.
    pub(crate) fn seen(&self) {
        self.connection.last_seen_ms.store(now_ms(), Relaxed);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        match self.id {
            Some(id) => {
                OPEN.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            }
            None => {
                UNTRACKED.fetch_sub(1, Relaxed);
            }
        }
    }
}

/// Lists a connection that just opened, until the returned registration is dropped.
pub(crate) fn register(kind: Kind, queue: &str, worker: &str, credit: usize) -> Registration {
    let now = now_ms();
    let connection = Arc::new(Connection {
        kind,
        queue: queue.to_string(),
        worker: worker.to_string(),
        opened_ms: now,
        credit: AtomicU64::new(credit as u64),
        last_seen_ms: AtomicU64::new(now),
    });
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let id = if open.len() < MAX {
        let id = NEXT_ID.fetch_add(1, Relaxed);
        open.insert(id, connection.clone());
        Some(id)
    } else {
        UNTRACKED.fetch_add(1, Relaxed);
        None
    };
    Registration { id, connection }
}

/// The connections open now, by queue and worker, and how many more are open but not listed.
pub(crate) fn snapshot() -> (Vec<Arc<Connection>>, u64) {
    let mut all: Vec<Arc<Connection>> = OPEN.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
    all.sort_by(|a, b| (&a.queue, &a.worker, a.opened_ms).cmp(&(&b.queue, &b.worker, b.opened_ms)));
    (all, UNTRACKED.load(Relaxed))
}
