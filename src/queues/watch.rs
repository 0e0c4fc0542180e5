//! AgentService.WatchAgent: one caller following an agent's progress, then its finish (see the
//! proto for the contract). One task per stream:
//!
//! - subscribes to the agent's queue channel first (`Wakeups::watch_agent`), then reads the
//!   snapshot (watchAgent, which marks the agent watched and awaited), so no update between the
//!   read and the subscription is lost; the snapshot's position — the current lease's token and
//!   update number, or the queue's token counter when no lease is held — drops every update it
//!   already shows;
//! - forwards each later update of a watched lease as the script that made it announced it (a
//!   grant, a heartbeat's progress, a step), in (token, number) order, at once (no batching);
//! - on a finish announced to awaiters it reads again, and ends with the finish once there is
//!   one past `after_token`; on a resync (the replica's subscription renewed, or the stream fell
//!   behind) it reads and sends a new snapshot;
//! - renews the marks every [`REFRESH`], so they outlive the stream by at most [`MARK`].
//!
//! Nothing here polls: between updates the task sleeps on the channel, the refresh timer, the
//! stream's wait and the caller leaving.

use std::{pin::Pin, sync::Arc, time::Duration};

use tokio::{sync::mpsc, time::Instant};
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tonic::Status;

use crate::error::{Error, Result};
use crate::flows::store::AwaitState;
use crate::pb;
use crate::queues::leases::step_pb;
use crate::queues::records::StepRecord;
use crate::queues::store::{Queues, Watched};
use crate::store::wake::{AgentEvents, AgentSignal, AgentUpdate, Wakeups};

pub(crate) type WatchAgentStream = Pin<Box<dyn Stream<Item = Result<pb::WatchAgentResponse, Status>> + Send>>;

/// How long a read marks the agent watched and awaited.
const MARK: Duration = Duration::from_secs(30);

/// How often an open stream renews its marks.
const REFRESH: Duration = Duration::from_secs(10);

/// Updates buffered for a caller that reads slowly.
const BUFFER: usize = 64;

/// What opening a WatchAgent stream takes from the AgentService that serves it.
pub(crate) struct Opener<'a> {
    pub store: &'a Queues,
    pub wakeups: &'a Wakeups,
    /// Cancelled when the server begins a graceful shutdown.
    pub shutdown: &'a tokio_util::sync::CancellationToken,
}

/// A validated request: the physical queue (the agent's shard) and what the caller asked.
pub(crate) struct Watch {
    pub queue: String,
    pub shard: String,
    pub name: String,
    pub after_token: u64,
    pub wait: Duration,
}

/// Subscribes, reads the snapshot and starts the stream's task. NOT_FOUND (nothing written)
/// for an agent that does not exist and has no kept finish.
pub(crate) async fn open(
    service: &Opener<'_>,
    watch: Watch,
) -> Result<mpsc::Receiver<Result<pb::WatchAgentResponse, Status>>> {
    if service.shutdown.is_cancelled() {
        return Err(Error::Unavailable("server is shutting down".into()));
    }
    let deadline = Instant::now() + watch.wait;
    // Subscribed before the first read: an update in between is heard, and dropped if the
    // snapshot shows it.
    let events = service.wakeups.watch_agent(&watch.shard, &watch.name).await?;
    let first = service.store.watch_read(&watch.shard, &watch.name, mark_ms(deadline)).await?;
    if finish_of(&first, watch.after_token).is_none() && first.state == AwaitState::Missing {
        return Err(missing(&watch));
    }
    let (tx, rx) = mpsc::channel(BUFFER);
    let task = Task {
        store: service.store.clone(),
        shutdown: service.shutdown.clone(),
        watch,
        deadline,
        events,
        tx,
        position: (0, 0),
    };
    let counted = crate::rpc::opens::Counted::new();
    tokio::spawn(async move {
        let _counted = counted;
        task.run(first).await
    });
    Ok(rx)
}

fn missing(watch: &Watch) -> Error {
    Error::NotFound(format!(
        "agent {:?} in queue {:?}: no such agent, and no finish of it is kept",
        watch.name, watch.queue
    ))
}

/// How long to mark: [`MARK`], or less when the stream ends sooner (at least a second).
fn mark_ms(deadline: Instant) -> u64 {
    let left = deadline.saturating_duration_since(Instant::now());
    left.min(MARK).max(Duration::from_secs(1)).as_millis() as u64
}

/// The kept finish a stream ends with: one past `after_token` (or of no run).
fn finish_of(w: &Watched, after_token: u64) -> Option<&crate::flows::store::FinishRecord> {
    w.finish.as_ref().filter(|f| f.token == 0 || f.token > after_token)
}

struct Task {
    store: Queues,
    shutdown: tokio_util::sync::CancellationToken,
    watch: Watch,
    deadline: Instant,
    events: AgentEvents,
    tx: mpsc::Sender<Result<pb::WatchAgentResponse, Status>>,
    /// The last (token, update number) the caller was shown.
    position: (u64, u64),
}

/// What a read leads to.
enum Next {
    Go,
    End,
}

impl Task {
    async fn run(mut self, first: Watched) {
        if let Ok(Next::End) | Err(_) = self.show(first, true).await {
            return;
        }
        let mut refresh = tokio::time::interval_at(Instant::now() + REFRESH, REFRESH);
        loop {
            let signal = tokio::select! {
                _ = self.shutdown.cancelled() => return,
                _ = self.tx.closed() => return,
                _ = tokio::time::sleep_until(self.deadline) => return,
                _ = refresh.tick() => Some(AgentSignal::Finished),
                signal = self.events.recv() => signal,
            };
            let next = match signal {
                None => return,
                Some(AgentSignal::Update(update)) => self.update(&update).await,
                // A finish was announced, or the marks are due again: read (and renew).
                Some(AgentSignal::Finished) => self.read(false).await,
                Some(AgentSignal::Resync) => self.read(true).await,
            };
            if let Ok(Next::End) | Err(_) = next {
                return;
            }
        }
    }

    /// Reads (and renews the marks); `snapshot`: sends a snapshot. A read that fails because
    /// Redis does not answer (a restart, a failover) is tried again, 50 ms doubling to 2 s,
    /// until the stream's wait ends: the stream neither hangs on a subscription that is gone nor
    /// ends on a passing failure. Another error ends the stream with it.
    async fn read(&mut self, snapshot: bool) -> Result<Next> {
        let mut backoff = crate::client::Backoff::between(Duration::from_millis(50), Duration::from_secs(2));
        // Updates heard meanwhile are older than what the read will show: a snapshot follows.
        let mut snapshot = snapshot;
        loop {
            match self.store.watch_read(&self.watch.shard, &self.watch.name, mark_ms(self.deadline)).await {
                Ok(w) => return self.show(w, snapshot).await,
                Err(e @ (Error::Unavailable(_) | Error::CircuitOpen { .. })) => {
                    tracing::debug!(error = %e, "WatchAgent: reading again");
                    snapshot = true;
                }
                Err(e) => {
                    let _ = self.tx.send(Err(Status::from(e))).await;
                    return Ok(Next::End);
                }
            }
            tokio::select! {
                _ = self.shutdown.cancelled() => return Ok(Next::End),
                _ = self.tx.closed() => return Ok(Next::End),
                _ = tokio::time::sleep_until(self.deadline) => return Ok(Next::End),
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }

    async fn send(&self, msg: pb::WatchAgentResponse) -> Result<()> {
        self.tx.send(Ok(msg)).await.map_err(|_| Error::Internal("caller left".into()))
    }

    /// Sends the finish and ends, or (with `snapshot`) a snapshot, moving the position to it.
    async fn show(&mut self, w: Watched, snapshot: bool) -> Result<Next> {
        if let Some(f) = finish_of(&w, self.watch.after_token).cloned() {
            let steps = StepRecord::parse_kept(&w.kept_steps)
                .filter(|(token, at_ms, _)| *token == f.token && *at_ms == f.at_ms)
                .map(|(_, _, steps)| steps.into_iter().map(step_pb).collect())
                .unwrap_or_default();
            let finish = pb::AwaitResponse {
                done: true,
                result: Some(crate::flows::service::result_pb(&self.watch.shard, &self.watch.name, f)),
                state: 0,
                result_not_kept: false,
                steps,
            };
            let msg = pb::WatchAgentResponse {
                update: pb::WatchUpdate::Finished as i32,
                finish: Some(finish),
                ..Default::default()
            };
            self.send(msg).await?;
            return Ok(Next::End);
        }
        if w.state == AwaitState::Missing {
            let _ = self.tx.send(Err(Status::from(missing(&self.watch)))).await;
            return Ok(Next::End);
        }
        // Where the snapshot stands: the current lease's last update, or (no lease) before
        // every lease still to come.
        let lease = w.lease.as_ref().filter(|_| w.state == AwaitState::Working);
        let position = match lease {
            Some(l) => (l.token, l.watch.unwrap_or(0)),
            None => (w.seq, u64::MAX),
        };
        if snapshot {
            self.position = position;
            let msg = pb::WatchAgentResponse {
                update: pb::WatchUpdate::Snapshot as i32,
                state: crate::flows::service::await_state_pb(w.state) as i32,
                token: lease.map_or(0, |l| l.token),
                sequence: lease.map_or(0, |l| l.watch.unwrap_or(0)),
                attempt: lease.map_or(0, |_| w.streak + 1),
                progress: lease.map(|l| l.progress.clone()).unwrap_or_default(),
                steps: w.steps.into_iter().map(step_pb).collect(),
                finish: None,
            };
            self.send(msg).await?;
        }
        Ok(Next::Go)
    }

    /// Forwards an update the caller has not seen.
    async fn update(&mut self, u: &Arc<AgentUpdate>) -> Result<Next> {
        if (u.token, u.n) <= self.position {
            return Ok(Next::Go);
        }
        let Some(msg) = update_pb(u) else { return Ok(Next::Go) };
        self.position = (u.token, u.n);
        self.send(msg).await?;
        Ok(Next::Go)
    }
}

/// An update on the wire: "g" (data: the attempt), "p" (the progress), "s" ("<at>|<step>|<result>").
fn update_pb(u: &AgentUpdate) -> Option<pb::WatchAgentResponse> {
    let mut msg = pb::WatchAgentResponse {
        state: pb::AgentState::Working as i32,
        token: u.token,
        sequence: u.n,
        ..Default::default()
    };
    match u.kind {
        b'g' => {
            msg.update = pb::WatchUpdate::Granted as i32;
            msg.attempt = std::str::from_utf8(&u.data).ok()?.parse().ok()?;
        }
        b'p' => {
            msg.update = pb::WatchUpdate::Progress as i32;
            msg.progress = String::from_utf8_lossy(&u.data).into_owned();
        }
        b's' => {
            let mut f = u.data.splitn(3, |b| *b == b'|');
            let (Some(at), Some(step), Some(result)) = (f.next(), f.next(), f.next()) else { return None };
            msg.update = pb::WatchUpdate::Step as i32;
            msg.steps = vec![step_pb(StepRecord {
                name: String::from_utf8_lossy(step).into_owned(),
                recorded_at_ms: std::str::from_utf8(at).ok()?.parse().ok()?,
                result: result.to_vec(),
            })];
        }
        _ => return None,
    }
    Some(msg)
}

/// The stream a WatchAgent call answers with.
pub(crate) fn stream(
    rx: mpsc::Receiver<Result<pb::WatchAgentResponse, Status>>,
) -> ReceiverStream<Result<pb::WatchAgentResponse, Status>> {
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_on_the_wire() {
        let u = |kind: u8, data: &[u8]| AgentUpdate { token: 7, n: 2, kind, data: data.to_vec() };
        let g = update_pb(&u(b'g', b"3")).unwrap();
        assert_eq!((g.update, g.token, g.sequence, g.attempt), (pb::WatchUpdate::Granted as i32, 7, 2, 3));
        let p = update_pb(&u(b'p', b"50%|half")).unwrap();
        assert_eq!(p.progress, "50%|half");
        let s = update_pb(&u(b's', b"1700000000123|fetch|a|b\x00\xff")).unwrap();
        assert_eq!(s.steps[0].name, "fetch");
        assert_eq!(s.steps[0].result, b"a|b\x00\xff");
        assert!(update_pb(&u(b's', b"x")).is_none());
        assert!(update_pb(&u(b'z', b"")).is_none());
    }
}
