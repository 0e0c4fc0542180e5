//! Pools: the state transitions of ClaimService, one script each.

use crate::store::keys::ChannelKind;
use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::store::shards::Shard;
use crate::store::{over_core, reply::Reply, scripts::FromReply, scripts::Int, scripts::PurgePage, Core, Path};

/// The typed calls of `lua/pools/`, generated from the scripts' headers.
pub(crate) mod calls {
    use crate::store::keys::PoolKeys;
    include!(concat!(env!("OUT_DIR"), "/calls_pools.rs"));
}

/// What an offer did: resources made idle, handed to waiting claims, and already known.
pub(crate) struct Offered(u32, u32, u32);

impl FromReply for Offered {
    /// `{ idle, handed, duplicates }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(Offered(r.next()?, r.next()?, r.next()?))
    }
}

/// What claimResource answered (the pool a waiting claim is in is the caller's).
pub(crate) enum ClaimReply {
    Claimed(Claimed),
    Nothing,
    Waiting { claim_id: String, scale_up: bool },
    LineFull,
}

impl FromReply for ClaimReply {
    /// `{ 1, id, token, claimed at, attributes }`, `{ 0 }`, `{ 2, claim id, scale-up }`, `{ -2 }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(match r.next::<i64>()? {
            1 => ClaimReply::Claimed(claimed(&mut r)?),
            0 => ClaimReply::Nothing,
            2 => ClaimReply::Waiting { claim_id: r.next()?, scale_up: r.next::<i64>()? == 1 },
            -2 => ClaimReply::LineFull,
            code => return Err(Error::Internal(format!("claimResource: unknown code {code}"))),
        })
    }
}

/// What pickupClaim answered: the resource taken, if any.
pub(crate) struct PickedUp(Option<Claimed>);

impl FromReply for PickedUp {
    /// `{ 1, id, token, claimed at, attributes }` taken; `{ 0 }` or `{ -1 }` not.
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(PickedUp(match r.next::<i64>()? {
            1 => Some(claimed(&mut r)?),
            _ => None,
        }))
    }
}

/// What resumePool answered.
pub(crate) struct Resumed {
    pub was_paused: bool,
    /// Resources handed to waiting claims.
    pub _handed: u64,
}

impl FromReply for Resumed {
    /// `{ 1 if it was paused (0 if not), resources handed }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(Resumed { was_paused: r.next::<i64>()? == 1, _handed: r.next()? })
    }
}

/// A resource as handed to a claimer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub id: String,
    pub token: u64,
    pub claimed_at_ms: i64,
    /// Offered attributes with the claim's over them.
    pub attributes: BTreeMap<String, String>,
}

/// What a Claim found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimStart {
    Claimed(Claimed),
    /// Nothing idle and no wait asked for.
    Nothing,
    /// Waiting in the line of `pool` (the physical pool: a shard of a sharded pool) under this
    /// claim id; `scale_up` if this claim raised the signal.
    Waiting {
        pool: String,
        claim_id: String,
        scale_up: bool,
    },
    /// The line is full.
    LineFull,
}

/// How a waiting claim is settled (`pickupClaim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pickup {
    /// Take an assigned resource, else keep waiting.
    Peek,
    /// The wait ended: take an assigned resource, else leave the line.
    End,
    /// The caller went away: leave the line, giving back any assigned resource.
    Abandon,
}

/// What a Claim asks for beyond its pool and claimer: its request id ("" for none) and hold
/// (0: none), carried through the wait in line to the script that takes the resource.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimTerms {
    pub request_id: String,
    pub hold_ms: u64,
}

impl ClaimTerms {
    /// The field the claim's answer is remembered under ("" without a request id).
    pub fn field(&self, claimer: &str) -> String {
        crate::store::request_field(&self.request_id, || format!("claim|{claimer}"))
    }
}

/// How a claim ends (`endClaim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimEnd {
    Reuse,
    Return,
    Fail,
    /// The claimer never got it: back to the front of the ready queue.
    GiveBack,
}

/// A pool's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub now_ms: i64,
    pub idle: u64,
    pub claimed: u64,
    pub waiting: u64,
    /// Arrival of the first claim in line.
    pub first_arrival_ms: Option<i64>,
    pub scale_up: bool,
    pub dead_lettered: u64,
    /// Idle since, of the oldest idle resource (over at most 1,000).
    pub oldest_idle_since_ms: Option<i64>,
    pub average_idle_ms: i64,
    /// Claims held longer than the stuck age asked for.
    pub stuck: u64,
    /// Claims served so far (a counter).
    pub claimed_total: u64,
    /// Paused (AdminService.Pause).
    pub paused: bool,
}

fn claimed(r: &mut Reply) -> Result<Claimed> {
    let id: String = r.next()?;
    let token = r.next()?;
    let claimed_at_ms = r.next()?;
    let json: String = r.next()?;
    let attributes = serde_json::from_str(&json).map_err(|e| Error::Internal(format!("attributes of {id}: {e}")))?;
    Ok(Claimed { id, token, claimed_at_ms, attributes })
}

fn json(attrs: &BTreeMap<String, String>) -> String {
    serde_json::to_string(attrs).expect("a map of strings serializes")
}

/// The pools store: resources offered, claimed and returned, over the core. Its methods take a
/// pool's name and route to its shards (`pools::shards`); the sweeps' take a physical pool.
#[derive(Clone)]
pub struct Pools {
    core: Core,
}

over_core!(Pools);

impl Pools {
    pub fn new(core: Core) -> Self {
        Self { core }
    }
}

impl Shard<'_, Pools> {
    /// Offers resources in order; returns (idle, handed, duplicates) (a retry with the same
    /// `request_id`: the first call's).
    pub(super) async fn offer(
        &self,
        pool: &str,
        resources: &[(String, BTreeMap<String, String>)],
        request_id: &str,
    ) -> Result<(u32, u32, u32)> {
        self.remember_pool(pool).await?;
        // In steps of script_batch, each atomic; a retry finds each step's answer.
        let (mut idle, mut handed, mut duplicates) = (0, 0, 0);
        for (i, chunk) in self.policy.chunks(resources).enumerate() {
            let step_id = crate::store::Policy::step_request_id(request_id, i);
            let (a, b, c) = self.offer_script(pool, chunk, &step_id).await?;
            idle += a;
            handed += b;
            duplicates += c;
        }
        Ok((idle, handed, duplicates))
    }

    /// One offerResources call.
    async fn offer_script(
        &self,
        pool: &str,
        resources: &[(String, BTreeMap<String, String>)],
        request_id: &str,
    ) -> Result<(u32, u32, u32)> {
        let k = self.keys.pool(pool);
        let channel = self.keys.announce(ChannelKind::Pool, pool);
        let request = crate::store::request_field(request_id, || "offer".into());
        let attrs: Vec<String> = resources.iter().map(|(_, attrs)| json(attrs)).collect();
        let call = calls::OfferResources {
            keys: &k,
            channel: &channel,
            pool,
            request: &request,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            offered: resources
                .iter()
                .zip(&attrs)
                .map(|((id, _), attrs)| calls::OfferResourcesOffered { id, attrs, _item: Default::default() })
                .collect(),
        };
        let Offered(idle, handed, duplicates) = self.call(Path::WriteBack, call).await?;
        Ok((idle, handed, duplicates))
    }

    /// Claims the oldest idle resource, or joins the line for `wait_ms`; a retry with the
    /// same request id gets the resource the first call took.
    pub(super) async fn claim(
        &self,
        pool: &str,
        claimer: &str,
        attrs: &BTreeMap<String, String>,
        wait_ms: u64,
        max_line: u32,
        terms: &ClaimTerms,
    ) -> Result<ClaimStart> {
        let k = self.keys.pool(pool);
        let channel = self.keys.announce(ChannelKind::Pool, pool);
        let (attrs, request) = (json(attrs), terms.field(claimer));
        let call = calls::ClaimResource {
            keys: &k,
            claimer,
            attrs: &attrs,
            wait_ms,
            max_line: max_line as u64,
            channel: &channel,
            pool,
            request: &request,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            hold_ms: terms.hold_ms,
        };
        if wait_ms > 0 {
            // The claim may join the line: announce the pool first.
            self.remember_pool(pool).await?;
        }
        Ok(match self.call(Path::Dispatch, call).await? {
            ClaimReply::Claimed(c) => ClaimStart::Claimed(c),
            ClaimReply::Nothing => ClaimStart::Nothing,
            ClaimReply::Waiting { claim_id, scale_up } => {
                ClaimStart::Waiting { pool: pool.to_string(), claim_id, scale_up }
            }
            ClaimReply::LineFull => ClaimStart::LineFull,
        })
    }
    /// Ends a claim; `Error::LeaseLost` for a stale token. `request_id`: a retry with the same
    /// one succeeds again; for [`ClaimEnd::GiveBack`] it is the claim's own field
    /// ([`ClaimTerms::field`]), forgotten with the claim.
    pub(super) async fn end_claim(
        &self,
        pool: &str,
        id: &str,
        token: u64,
        end: ClaimEnd,
        error: &str,
        request_id: &str,
    ) -> Result<()> {
        let k = self.keys.pool(pool);
        let action = match end {
            ClaimEnd::Reuse => "reuse",
            ClaimEnd::Return => "return",
            ClaimEnd::Fail => "fail",
            ClaimEnd::GiveBack => "giveback",
        };
        let channel = self.keys.announce(ChannelKind::Pool, pool);
        let request = match end {
            ClaimEnd::GiveBack => request_id.to_string(),
            _ => crate::store::request_field(request_id, || format!("{action}|{id}|{token}")),
        };
        let call = calls::EndClaim {
            keys: &k,
            id,
            token: &token.to_string(),
            action,
            error,
            channel: &channel,
            pool,
            dlq_ttl_ms: self.policy.dead_letter.ttl_ms,
            dlq_max: self.policy.dead_letter.max_entries,
            request: &request,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
        };
        match self.call(Path::WriteBack, call).await?.0 {
            0 => Ok(()),
            _ => Err(Error::LeaseLost(format!("pool {pool}: resource {id} is not claimed with token {token}"))),
        }
    }
    /// A pool's counts; `stuck_age_ms` decides which claims count as stuck.
    pub(super) async fn pool_stats(&self, pool: &str, stuck_age_ms: u64) -> Result<PoolStats> {
        let k = self.keys.pool(pool);
        self.call(Path::Dispatch, calls::PoolStatus { keys: &k, stuck_age_ms }).await
    }
}

impl FromReply for PoolStats {
    /// `{ now, idle, claimed, waiting, first arrival (-1), scale-up, dead-lettered, oldest idle
    /// since (-1), average idle, stuck, claimed total, paused }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let r = &mut r;
        let now_ms = r.next()?;
        let idle = r.next()?;
        let claimed = r.next()?;
        let waiting = r.next()?;
        let first: i64 = r.next()?;
        Ok(PoolStats {
            now_ms,
            idle,
            claimed,
            waiting,
            first_arrival_ms: (first >= 0).then_some(first),
            scale_up: r.next::<i64>()? == 1,
            dead_lettered: r.next()?,
            oldest_idle_since_ms: {
                let v: i64 = r.next()?;
                (v >= 0).then_some(v)
            },
            average_idle_ms: r.next()?,
            stuck: r.next()?,
            claimed_total: r.next()?,
            paused: r.next::<i64>()? == 1,
        })
    }
}

impl Pools {
    /// The pools among `pools` holding a hand-over not yet picked up or a claim's hold (one
    /// EXISTS of the two keys each, pipelined or concurrent, no script): the only ones
    /// `reclaim_assignments` can have work in.
    pub async fn pools_with_assignments(&self, pools: &[String]) -> Result<Vec<String>> {
        if pools.is_empty() {
            return Ok(Vec::new());
        }
        let exists = pools.iter().map(|pool| {
            let k = self.keys.pool(pool);
            let mut cmd = redis::cmd("EXISTS");
            cmd.arg(&k.assigned).arg(&k.holds);
            cmd
        });
        let exists: Vec<u64> = redis::from_redis_value(redis::Value::Array(self.redis.each(exists.collect()).await?))
            .map_err(redis::RedisError::from)?;
        Ok(pools.iter().zip(exists).filter(|(_, n)| *n > 0).map(|(p, _)| p.clone()).collect())
    }

    /// Every pool ever offered to or waited on.
    pub async fn pools(&self) -> Result<Vec<String>> {
        let mut conn = self.redis.conn().await?;
        Ok(redis::cmd("SMEMBERS").arg(self.keys.pools()).query_async(&mut conn).await?)
    }

    async fn remember_pool(&self, pool: &str) -> Result<()> {
        self.remember(self.keys.pools(), pool).await
    }

    /// Settles a waiting claim in the line of `pool` (as [`ClaimStart::Waiting`] named it);
    /// Some(resource) when it was taken (its hold started, its answer remembered under
    /// `field`, the claim's [`ClaimTerms::field`]).
    pub async fn pickup(
        &self,
        pool: &str,
        claim_id: &str,
        mode: Pickup,
        field: &str,
        hold_ms: u64,
    ) -> Result<Option<Claimed>> {
        let k = self.keys.pool(pool);
        let mode = match mode {
            Pickup::Peek => "peek",
            Pickup::End => "end",
            Pickup::Abandon => "abandon",
        };
        let channel = self.keys.announce(ChannelKind::Pool, pool);
        let call = calls::PickupClaim {
            keys: &k,
            claim_id,
            mode,
            channel: &channel,
            pool,
            request: field,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            hold_ms,
        };
        Ok(self.call(Path::Dispatch, call).await?.0)
    }

    /// Gives back resources assigned to claims never picked up, and those of claims whose
    /// hold ended unreturned; returns how many.
    pub async fn reclaim_assignments(&self, pool: &str, grace_ms: u64, limit: u32) -> Result<u64> {
        let k = self.keys.pool(pool);
        let channel = self.keys.announce(ChannelKind::Pool, pool);
        let call = calls::ReclaimAssignments { keys: &k, grace_ms, limit: limit as u64, channel: &channel, pool };
        Ok(self.call(Path::WriteBack, call).await?.0 as u64)
    }
}
