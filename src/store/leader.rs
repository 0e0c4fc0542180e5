//! Elections: lazy leader election with fencing tokens (LeaderService, and Baton's own
//! sweepers through `crate::leadership`).

use super::keys::ChannelKind;
use super::{reply::Reply, scripts::Args, Path, Store};
use crate::error::{Error, Result};

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderEventKind {
    Elected,
    Resigned,
    Expired,
}

/// A leadership change, as published by the election scripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderEvent {
    pub election: String,
    pub kind: LeaderEventKind,
    pub token: u64,
    pub leader: String,
    /// The new term's expiry (Elected) or the old term's end (Resigned, Expired).
    pub at_ms: i64,
}

impl LeaderEvent {
    /// Parses "election|kind|token|candidate|at".
    pub fn parse(payload: &str) -> Option<Self> {
        let mut f = payload.split('|');
        let election = f.next()?.to_string();
        let kind = match f.next()? {
            "ELECTED" => LeaderEventKind::Elected,
            "RESIGNED" => LeaderEventKind::Resigned,
            "EXPIRED" => LeaderEventKind::Expired,
            _ => return None,
        };
        let token = f.next()?.parse().ok()?;
        let leader = f.next()?.to_string();
        let at_ms = f.next()?.parse().ok()?;
        Some(Self { election, kind, token, leader, at_ms })
    }
}

fn term(r: &mut Reply) -> Result<Term> {
    Ok(Term { token: r.next()?, leader: r.next()?, expires_ms: r.next()? })
}

impl Store {
    /// Becomes leader if there is none; refreshes if `candidate` already leads.
    pub async fn campaign(&self, election: &str, candidate: &str, ttl_ms: u64) -> Result<Campaigned> {
        let k = self.keys.election(election);
        let args = Args::new()
            .arg(candidate)
            .arg(ttl_ms)
            .arg(self.keys.announce(ChannelKind::Election, election))
            .arg(election);
        let reply = self.run(Path::Dispatch, "campaignLeader", &[&k.term, &k.seq], args).await?;
        let mut r = Reply::new("campaignLeader", reply)?;
        let is_leader = r.next::<i64>()? == 1;
        let term = term(&mut r)?;
        let now_ms = r.next()?;
        let new_term = r.next::<i64>()? == 1;
        Ok(Campaigned { is_leader, term, now_ms, new_term })
    }

    /// Extends a term; `Error::LeaseLost` if it is not `candidate`'s term `token` any more.
    pub async fn renew(&self, election: &str, candidate: &str, token: u64) -> Result<i64> {
        let k = self.keys.election(election);
        let reply = self.run(Path::WriteBack, "renewLeader", &[&k.term], Args::new().arg(candidate).arg(token)).await?;
        let mut r = Reply::new("renewLeader", reply)?;
        match r.next::<i64>()? {
            0 => r.next(),
            _ => Err(Error::LeaseLost(format!("election {election}: {candidate} does not lead with token {token}"))),
        }
    }

    /// Ends a term at once; returns when (Redis time).
    pub async fn resign(&self, election: &str, candidate: &str, token: u64) -> Result<i64> {
        let k = self.keys.election(election);
        let args = Args::new()
            .arg(candidate)
            .arg(token)
            .arg(self.keys.announce(ChannelKind::Election, election))
            .arg(election);
        let reply = self.run(Path::WriteBack, "resignLeader", &[&k.term], args).await?;
        let mut r = Reply::new("resignLeader", reply)?;
        match r.next::<i64>()? {
            0 => r.next(),
            _ => Err(Error::LeaseLost(format!("election {election}: {candidate} does not lead with token {token}"))),
        }
    }

    /// The current leader. With `announce_expiry`, a term found expired is ended and EXPIRED
    /// is published (once across replicas).
    pub async fn leader(&self, election: &str, announce_expiry: bool) -> Result<LeaderState> {
        let k = self.keys.election(election);
        let args = Args::new()
            .arg(if announce_expiry { "1" } else { "0" })
            .arg(self.keys.announce(ChannelKind::Election, election))
            .arg(election);
        let reply = self.run(Path::Dispatch, "readLeader", &[&k.term], args).await?;
        let mut r = Reply::new("readLeader", reply)?;
        let now_ms = r.next()?;
        let term = if r.is_empty() { None } else { Some(term(&mut r)?) };
        Ok(LeaderState { now_ms, term })
    }
}
