//! Holding a won leadership term, by the rule the server states (`leader.proto`,
//! RenewResponse): renew `renew_in` after the answered call was *sent*; stop acting as leader
//! `step_down_in` after it was sent unless a later Renew, sent before then, has answered; each
//! Renew's deadline is that step-down moment. Checked on a timer, so a connection (or a Redis)
//! that never answers cannot keep a process leading after its term could have expired.
//!
//! [`hold`] is the whole state machine, parameterized by the renewal call: the client's
//! [`crate::leadership::Leadership`] renews through LeaderService, Baton's own background
//! leadership through its store.

use std::{fmt::Display, future::Future};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::pb::leadership::Rule;
use crate::Backoff;

/// What one renewal came to.
#[derive(Debug)]
pub enum Renewal<E> {
    /// The term goes on, by this rule (measured from the renewal's send time).
    Renewed(Rule),
    /// The term is gone (LEASE_LOST): another candidate may lead.
    Lost,
    /// The renewal failed and may be tried again (a transport error, an overloaded server).
    Failed(E),
}

/// Why a held term ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The shutdown token was cancelled: the caller resigns.
    Shutdown,
    /// A renewal was refused.
    Lost,
    /// No renewal sent in time answered by the step-down moment.
    SteppedDown,
}

/// Holds a term won by a Campaign answered at `won` with `rule`: confirms it by a renewal at
/// once and calls `gained` only then, renews by the rule (a failed renewal again after a
/// backoff), and returns when the term ends. `renew(deadline)` makes one renewal; its answer
/// counts only before `deadline`.
///
/// A Campaign that waited for a vacancy was sent long before its term began, so the confirming
/// renewal is bounded from the answer instead; nothing is reported before it answers, and from
/// then on every step-down moment runs from a renewal's own send time.
pub async fn hold<R, Fut, E>(
    won: Instant,
    rule: Rule,
    shutdown: &CancellationToken,
    mut renew: R,
    gained: impl FnOnce(),
) -> Ended
where
    R: FnMut(Instant) -> Fut,
    Fut: Future<Output = Renewal<E>>,
    E: Display,
{
    let mut gained = Some(gained);
    let mut step_down = won + rule.step_down_in;
    let mut next = Instant::now();
    let mut backoff = Backoff::new();
    loop {
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => return Ended::Shutdown,
            _ = tokio::time::sleep_until(step_down) => return Ended::SteppedDown,
            _ = tokio::time::sleep_until(next) => {}
        }
        let sent = Instant::now();
        let answer = tokio::select! {
            _ = shutdown.cancelled() => return Ended::Shutdown,
            // An answer after the step-down moment is worth nothing.
            r = tokio::time::timeout_at(step_down, renew(step_down)) => match r {
                Ok(answer) => answer,
                Err(_) => return Ended::SteppedDown,
            },
        };
        match answer {
            Renewal::Renewed(rule) => {
                if let Some(gained) = gained.take() {
                    gained();
                }
                backoff.reset();
                step_down = sent + rule.step_down_in;
                next = sent + rule.renew_in;
            }
            Renewal::Lost => return Ended::Lost,
            Renewal::Failed(e) => {
                tracing::warn!(error = %e, "renewal failed; trying again");
                next = Instant::now() + backoff.next_delay();
            }
        }
    }
}
