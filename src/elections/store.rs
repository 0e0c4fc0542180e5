//! Elections: lazy leader election with fencing tokens (LeaderService, and Baton's own
//! sweepers through `crate::leadership`), the history of each election's terms (in the
//! election's slot, written by the scripts that begin and end terms) and the registry of
//! elections (`{registry}:elections`, written after a term's script: another slot).

use crate::error::{Error, Result};
use crate::store::keys::ChannelKind;
use crate::store::{over_core, reply::Reply, scripts::FromReply, Core, Path};

/// The typed calls of `lua/elections/`, generated from the scripts' headers.
mod calls {
    include!(concat!(env!("OUT_DIR"), "/calls_elections.rs"));
}

/// A term of leadership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub token: u64,
    pub leader: String,
    pub expires_ms: i64,
}

/// What a campaign found.
#[derive(Clone, Debug)]
pub struct Campaigned {
    pub is_leader: bool,
    pub term: Term,
    /// Redis time of the campaign.
    pub now_ms: i64,
    /// A new term began with this campaign.
    pub new_term: bool,
}

/// The current leader, if any, at Redis time `now_ms`.
#[derive(Clone, Debug)]
pub struct LeaderState {
    pub now_ms: i64,
    pub term: Option<Term>,
    /// Whether the election ever had a term (false: a name nobody campaigned in).
    pub known: bool,
}

/// Terms an election's history keeps.
pub const HISTORY_TERMS: usize = 50;

/// How a term ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermEnd {
    Resigned,
    Expired,
    /// A new term began while this one's end was unrecorded.
    Superseded,
    /// Ended, but not recorded how (by a Baton older than the history).
    Unrecorded,
}

/// One term of an election's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastTerm {
    pub token: u64,
    pub leader: String,
    pub started_ms: i64,
    /// When it ended and how; None while it is the current term.
    pub ended: Option<(i64, TermEnd)>,
    /// The current term's expiry (None for a term that ended).
    pub expires_ms: Option<i64>,
}

impl PastTerm {
    /// Parses a history entry "token|leader|started_at|ended_at|how".
    fn parse(entry: &str, current_expires: i64) -> Option<Self> {
        let mut f = entry.split('|');
        let token = f.next()?.parse().ok()?;
        let leader = f.next()?.to_string();
        let started_ms = f.next()?.parse().ok()?;
        let ended_at = f.next()?;
        let how = f.next()?;
        let ended = if ended_at.is_empty() {
            None
        } else {
            let how = match how {
                "resigned" => TermEnd::Resigned,
                "expired" => TermEnd::Expired,
                "superseded" => TermEnd::Superseded,
                _ => TermEnd::Unrecorded,
            };
            Some((ended_at.parse().ok()?, how))
        };
        let expires_ms = (ended.is_none() && current_expires > 0).then_some(current_expires);
        Some(Self { token, leader, started_ms, ended, expires_ms })
    }
}

/// An election of the registry: its name and when its latest term began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    pub election: String,
    pub last_term_ms: i64,
}

/// A page of the registry, and where the next one starts.
#[derive(Clone, Debug)]
pub struct ElectionPage {
    pub elections: Vec<Registered>,
    /// (last_term_ms, name) of the last entry, when there may be more.
    pub next: Option<(i64, String)>,
}

fn term(r: &mut Reply) -> Result<Term> {
    Ok(Term { token: r.next()?, leader: r.next()?, expires_ms: r.next()? })
}

impl FromReply for Campaigned {
    /// `{ isLeader (1/0), token, leader, expiresAt, now, newTerm (1/0) }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let is_leader = r.next::<i64>()? == 1;
        let term = term(&mut r)?;
        let now_ms = r.next()?;
        let new_term = r.next::<i64>()? == 1;
        Ok(Self { is_leader, term, now_ms, new_term })
    }
}

/// What a renewal found: the term extended to `expires_ms`, or not this candidate's any more.
pub enum Renewal {
    Renewed { expires_ms: i64, ttl_ms: u64 },
    Lost,
}

impl FromReply for Renewal {
    /// `{ -1 }` lost, `{ 0, expiresAt, ttl }` renewed.
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(match r.next::<i64>()? {
            0 => Renewal::Renewed { expires_ms: r.next()?, ttl_ms: r.next()? },
            _ => Renewal::Lost,
        })
    }
}

/// What a resignation found: the term ended at `at_ms`, or not this candidate's any more.
pub enum Resignation {
    Resigned { at_ms: i64 },
    Lost,
}

impl FromReply for Resignation {
    /// `{ -1 }` lost, `{ 0, resignedAt }` resigned.
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(match r.next::<i64>()? {
            0 => Resignation::Resigned { at_ms: r.next()? },
            _ => Resignation::Lost,
        })
    }
}

impl FromReply for LeaderState {
    /// `{ now }` no leader and none ever, `{ now, 0 }` no leader now (a term ended),
    /// `{ now, token, leader, expiresAt }` a leader.
    fn from_reply(mut r: Reply) -> Result<Self> {
        let now_ms = r.next()?;
        let known = !r.is_empty();
        let term = if r.remaining() > 1 { Some(term(&mut r)?) } else { None };
        Ok(LeaderState { now_ms, term, known })
    }
}

/// An election's history, newest term first.
pub struct History(pub Vec<PastTerm>);

impl FromReply for History {
    /// `{ now, currentExpiresAt (0: no current term), entry... }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let _now: i64 = r.next()?;
        let current: i64 = r.next()?;
        let mut out = Vec::new();
        while !r.is_empty() {
            let entry: String = r.next()?;
            out.push(
                PastTerm::parse(&entry, current)
                    .ok_or_else(|| Error::Internal(format!("readHistory: malformed entry {entry:?}")))?,
            );
        }
        Ok(History(out))
    }
}

/// The elections store: campaigns, terms and their history, over the core.
#[derive(Clone)]
pub struct Elections {
    core: Core,
}

over_core!(Elections);

impl Elections {
    pub fn new(core: Core) -> Self {
        Self { core }
    }

    /// Becomes leader if there is none; refreshes if `candidate` already leads.
    pub async fn campaign(&self, election: &str, candidate: &str, ttl_ms: u64) -> Result<Campaigned> {
        let k = self.keys.election(election);
        let channel = self.keys.announce(ChannelKind::Election, election);
        let call = calls::CampaignLeader {
            term: &k.term,
            seq: &k.seq,
            history: &k.history,
            candidate,
            ttl_ms,
            channel: &channel,
            election,
            history_keep: HISTORY_TERMS as u64,
        };
        let campaigned = self.call(Path::Dispatch, call).await?;
        if campaigned.new_term {
            self.register_election(election, campaigned.now_ms).await;
        }
        Ok(campaigned)
    }

    /// Records in the registry that a term of `election` began at `at_ms` (Redis time, from
    /// the script). A separate command: the registry's slot is not the election's. Not an
    /// error when it fails (the term stands, and the sweeper's discovery scan registers an
    /// election with a term record but no entry).
    async fn register_election(&self, election: &str, at_ms: i64) {
        let result = async {
            let mut conn = self.redis.conn().await?;
            redis::cmd("ZADD")
                .arg(self.keys.elections())
                .arg("GT")
                .arg(at_ms)
                .arg(election)
                .query_async::<i64>(&mut conn)
                .await?;
            Ok::<_, Error>(())
        };
        if let Err(e) = result.await {
            tracing::warn!(election, error = %e, "could not register the election (discovery will)");
        }
    }

    /// A page of the registry of elections, the most recent term first, after `after` (a
    /// previous page's `next`).
    pub async fn list_elections(&self, after: Option<(i64, String)>, limit: usize) -> Result<ElectionPage> {
        let mut conn = self.redis.conn().await?;
        let max = after.as_ref().map_or("+inf".to_string(), |(ms, _)| ms.to_string());
        let mut out = Vec::new();
        let mut offset = 0;
        // Entries of the cursor's own score that the previous page already gave (those at or
        // after its name, in reverse order) are skipped.
        loop {
            let batch: Vec<(String, i64)> = redis::cmd("ZREVRANGEBYSCORE")
                .arg(self.keys.elections())
                .arg(&max)
                .arg("-inf")
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(offset)
                .arg(limit + 1)
                .query_async(&mut conn)
                .await?;
            let got = batch.len();
            for (election, last_term_ms) in batch {
                if after.as_ref().is_some_and(|(ms, name)| last_term_ms == *ms && election >= *name) {
                    continue;
                }
                out.push(Registered { election, last_term_ms });
            }
            offset += got;
            if out.len() > limit || got < limit + 1 {
                break;
            }
        }
        let more = out.len() > limit;
        out.truncate(limit);
        let next = if more { out.last().map(|e| (e.last_term_ms, e.election.clone())) } else { None };
        Ok(ElectionPage { elections: out, next })
    }

    /// The newest `limit` terms of an election's history (0: all kept), newest first.
    pub async fn history(&self, election: &str, limit: usize) -> Result<Vec<PastTerm>> {
        let k = self.keys.election(election);
        let call = calls::ReadHistory { term: &k.term, history: &k.history, limit: limit as u64 };
        Ok(self.call(Path::Dispatch, call).await?.0)
    }

    /// Extends a term; `Error::LeaseLost` if it is not `candidate`'s term `token` any more.
    pub async fn renew(&self, election: &str, candidate: &str, token: u64) -> Result<(i64, u64)> {
        let k = self.keys.election(election);
        match self.call(Path::WriteBack, calls::RenewLeader { term: &k.term, candidate, token }).await? {
            Renewal::Renewed { expires_ms, ttl_ms } => Ok((expires_ms, ttl_ms)),
            Renewal::Lost => {
                Err(Error::LeaseLost(format!("election {election}: {candidate} does not lead with token {token}")))
            }
        }
    }

    /// Ends a term at once; returns when (Redis time).
    pub async fn resign(&self, election: &str, candidate: &str, token: u64) -> Result<i64> {
        let k = self.keys.election(election);
        let channel = self.keys.announce(ChannelKind::Election, election);
        let call =
            calls::ResignLeader { term: &k.term, history: &k.history, candidate, token, channel: &channel, election };
        match self.call(Path::WriteBack, call).await? {
            Resignation::Resigned { at_ms } => Ok(at_ms),
            Resignation::Lost => {
                Err(Error::LeaseLost(format!("election {election}: {candidate} does not lead with token {token}")))
            }
        }
    }

    /// The current leader. With `announce_expiry`, a term found expired is ended and EXPIRED
    /// is published (once across replicas).
    pub async fn leader(&self, election: &str, announce_expiry: bool) -> Result<LeaderState> {
        let k = self.keys.election(election);
        let channel = self.keys.announce(ChannelKind::Election, election);
        let call = calls::ReadLeader {
            term: &k.term,
            history: &k.history,
            expire: announce_expiry,
            channel: &channel,
            election,
        };
        self.call(Path::Dispatch, call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_entries_parse() {
        let open = PastTerm::parse("7|node-a|1000||", 5000).unwrap();
        assert_eq!(
            open,
            PastTerm { token: 7, leader: "node-a".into(), started_ms: 1000, ended: None, expires_ms: Some(5000) }
        );
        let gone = PastTerm::parse("6|b|500|900|resigned", 5000).unwrap();
        assert_eq!((gone.ended, gone.expires_ms), (Some((900, TermEnd::Resigned)), None));
        assert_eq!(PastTerm::parse("6|b|500|900|", 0).unwrap().ended, Some((900, TermEnd::Unrecorded)));
        assert_eq!(PastTerm::parse("6|b|500|900|superseded", 0).unwrap().ended, Some((900, TermEnd::Superseded)));
        assert!(PastTerm::parse("x|b|500||", 0).is_none());
        assert!(PastTerm::parse("6|b", 0).is_none());
    }
}
