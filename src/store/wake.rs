//! Wake-ups for long polls, across replicas. Scripts PUBLISH a queue's name on the wake
//! channel when an entry becomes the earliest of its waiting set; every replica subscribes once
//! and wakes the calls waiting on that queue. After a lost subscription every waiter is woken,
//! since messages may have been missed while it was down.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The waiters of every queue on this replica.
#[derive(Clone, Default)]
pub struct Wakeups {
    queues: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
}

impl Wakeups {
    /// The notifier of a queue's waiters. Hold it while waiting; `release` it afterwards.
    pub fn waiter(&self, queue: &str) -> Arc<Notify> {
        let mut queues = self.queues.lock().expect("wakeups lock");
        queues.entry(queue.to_string()).or_default().clone()
    }

    /// Forgets a queue's notifier when no call waits on it any more.
    pub fn release(&self, queue: &str, notify: Arc<Notify>) {
        let mut queues = self.queues.lock().expect("wakeups lock");
        drop(notify);
        if queues.get(queue).is_some_and(|n| Arc::strong_count(n) == 1) {
            queues.remove(queue);
        }
    }

    pub fn wake(&self, queue: &str) {
        if let Some(n) = self.queues.lock().expect("wakeups lock").get(queue) {
            n.notify_waiters();
        }
    }

    pub fn wake_all(&self) {
        for n in self.queues.lock().expect("wakeups lock").values() {
            n.notify_waiters();
        }
    }

    /// Follows the wake channel until `shutdown`, reconnecting with backoff.
    pub async fn run(self, url: String, channel: String, shutdown: CancellationToken) {
        let mut backoff = Duration::from_millis(100);
        loop {
            let attempt = async {
                let client = redis::Client::open(url.as_str())?;
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(&channel).await?;
                Ok::<_, redis::RedisError>(pubsub)
            };
            let pubsub = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = attempt => r,
            };
            match pubsub {
                Ok(pubsub) => {
                    backoff = Duration::from_millis(100);
                    // Anything published while we were not subscribed is lost: re-check all.
                    self.wake_all();
                    let mut messages = pubsub.into_on_message();
                    loop {
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            msg = messages.next() => match msg {
                                Some(msg) => {
                                    if let Ok(queue) = msg.get_payload::<String>() {
                                        self.wake(&queue);
                                    }
                                }
                                None => break,
                            },
                        }
                    }
                    tracing::warn!("wake-up subscription lost; resubscribing");
                    self.wake_all();
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "cannot subscribe to wake-ups");
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}
