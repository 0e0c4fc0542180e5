//! ClaimService entry points over sharded pools. A resource lives in shard CRC16(id) mod N.
//! A Claim takes an idle resource from the shards that have one, in turn; a Claim that must
//! wait joins the shortest line among the shards (the line that the shard's own returns and
//! offers serve first), and meanwhile takes an idle resource of another shard when one
//! appears there (see `pools::wait::claim`): `pool.max_line` bounds each shard's line.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::pools::store::Pools;
use crate::pools::store::{ClaimEnd, ClaimStart, ClaimTerms, Claimed, PoolStats};
use crate::store::shards::{in_turn, Shard};
use crate::store::SourceKind;

/// A resource offered: its id and attributes.
type Offered = (String, BTreeMap<String, String>);

impl Pools {
    /// Offers resources in order; returns (idle, handed, duplicates). On a sharded pool, one
    /// script per shard: atomic per shard, not across them (a retry with the same `request_id`
    /// gets each shard's first answer).
    pub async fn offer(&self, pool: &str, resources: &[Offered], request_id: &str) -> Result<(u32, u32, u32)> {
        if self.shard_count(SourceKind::Pool, pool) == 1 {
            return Shard(self).offer(pool, resources, request_id).await;
        }
        let mut by_shard: BTreeMap<String, Vec<Offered>> = BTreeMap::new();
        for r in resources {
            by_shard.entry(self.shard_of(SourceKind::Pool, pool, &r.0).into_owned()).or_default().push(r.clone());
        }
        let per_shard = Shard(self);
        let parts = futures::future::try_join_all(
            by_shard.iter().map(|(shard, part)| per_shard.offer(shard, part, request_id)),
        )
        .await?;
        Ok(parts.into_iter().fold((0, 0, 0), |a, p| (a.0 + p.0, a.1 + p.1, a.2 + p.2)))
    }

    /// Claims an idle resource, or joins a line for `wait_ms`. On a sharded pool: one round of
    /// peeks at every shard's idle count and line, then the claim script on the shards with
    /// something idle, in turn; failing that (and with a wait), the claim joins the shortest
    /// line. A claim with a request id first looks for its first answer in every shard (in
    /// the same round) and, found, asks that shard's script for it.
    pub async fn claim(
        &self,
        pool: &str,
        claimer: &str,
        attrs: &BTreeMap<String, String>,
        wait_ms: u64,
        max_line: u32,
        terms: &ClaimTerms,
    ) -> Result<ClaimStart> {
        if self.shard_count(SourceKind::Pool, pool) == 1 {
            return Shard(self).claim(pool, claimer, attrs, wait_ms, max_line, terms).await;
        }
        let shards = self.shard_names(SourceKind::Pool, pool);
        let (idle, lines, answered) = self.pool_sizes(&shards, &terms.field(claimer)).await?;
        if let Some(i) = answered {
            return Shard(self).claim(&shards[i], claimer, attrs, 0, 0, terms).await;
        }
        if let Some(c) = self.claim_idle(&shards, &idle, claimer, attrs, None, terms).await? {
            return Ok(ClaimStart::Claimed(c));
        }
        if wait_ms == 0 {
            return Ok(ClaimStart::Nothing);
        }
        let shortest = in_turn(shards.len(), |_| true).into_iter().min_by_key(|&i| lines[i]).unwrap_or(0);
        Shard(self).claim(&shards[shortest], claimer, attrs, wait_ms, max_line, terms).await
    }

    /// For a claim waiting in the line of `waiting_in` (a shard of `pool`): an idle resource of
    /// another shard, if one has any. Its shard's own line, if any, is served first.
    pub async fn claim_elsewhere(
        &self,
        pool: &str,
        waiting_in: &str,
        claimer: &str,
        attrs: &BTreeMap<String, String>,
        terms: &ClaimTerms,
    ) -> Result<Option<Claimed>> {
        let shards = self.shard_names(SourceKind::Pool, pool);
        if shards.len() == 1 {
            return Ok(None);
        }
        let (idle, _, _) = self.pool_sizes(&shards, "").await?;
        self.claim_idle(&shards, &idle, claimer, attrs, Some(waiting_in), terms).await
    }

    /// Idle resources and waiting claims of each shard, and the shard remembering an answer
    /// under `field` if any ("": none looked for): one round of ZCARDs (and HEXISTS).
    async fn pool_sizes(&self, shards: &[String], field: &str) -> Result<(Vec<u64>, Vec<u64>, Option<usize>)> {
        let per = if field.is_empty() { 2 } else { 3 };
        let mut cmds = Vec::with_capacity(shards.len() * per);
        for shard in shards {
            let k = self.keys.pool(shard);
            cmds.push(redis::cmd("ZCARD").arg(&k.idle).clone());
            cmds.push(redis::cmd("ZCARD").arg(&k.line).clone());
            if !field.is_empty() {
                cmds.push(redis::cmd("HEXISTS").arg(&k.answers).arg(field).clone());
            }
        }
        // No clock needed: one round of counts (concurrent on a cluster).
        let answers = self.redis.each(cmds).await?;
        let counts: Vec<u64> = answers.into_iter().map(|v| redis::from_redis_value(v).unwrap_or(0)).collect();
        let answered = (per == 3).then(|| counts.iter().skip(2).step_by(3).position(|&n| n > 0)).flatten();
        Ok((
            counts.iter().step_by(per).copied().collect(),
            counts.iter().skip(1).step_by(per).copied().collect(),
            answered,
        ))
    }

    /// Claims (without waiting) from the shards with something idle, in turn, skipping `skip`.
    async fn claim_idle(
        &self,
        shards: &[String],
        idle: &[u64],
        claimer: &str,
        attrs: &BTreeMap<String, String>,
        skip: Option<&str>,
        terms: &ClaimTerms,
    ) -> Result<Option<Claimed>> {
        for i in in_turn(shards.len(), |i| idle[i] > 0 && Some(shards[i].as_str()) != skip) {
            if let ClaimStart::Claimed(c) = Shard(self).claim(&shards[i], claimer, attrs, 0, 0, terms).await? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// Ends a claim; `Error::LeaseLost` for a stale token (see `Shard::end_claim` for `request_id`).
    pub async fn end_claim(
        &self,
        pool: &str,
        id: &str,
        token: u64,
        end: ClaimEnd,
        error: &str,
        request_id: &str,
    ) -> Result<()> {
        Shard(self).end_claim(&self.shard_of(SourceKind::Pool, pool, id), id, token, end, error, request_id).await
    }

    /// A pool's counts (a sharded pool's: summed over its shards); `stuck_age_ms` decides
    /// which claims count as stuck.
    pub async fn pool_stats(&self, pool: &str, stuck_age_ms: u64) -> Result<PoolStats> {
        if self.shard_count(SourceKind::Pool, pool) == 1 {
            return Shard(self).pool_stats(pool, stuck_age_ms).await;
        }
        let shards = self.shard_names(SourceKind::Pool, pool);
        let per_shard = Shard(self);
        let parts = futures::future::try_join_all(shards.iter().map(|s| per_shard.pool_stats(s, stuck_age_ms))).await?;
        let idle: u64 = parts.iter().map(|p| p.idle).sum();
        let idle_ms: i64 = parts.iter().map(|p| p.average_idle_ms * p.idle as i64).sum();
        Ok(PoolStats {
            now_ms: parts.iter().map(|p| p.now_ms).max().unwrap_or_default(),
            idle,
            claimed: parts.iter().map(|p| p.claimed).sum(),
            waiting: parts.iter().map(|p| p.waiting).sum(),
            first_arrival_ms: parts.iter().filter_map(|p| p.first_arrival_ms).min(),
            scale_up: parts.iter().any(|p| p.scale_up),
            dead_lettered: parts.iter().map(|p| p.dead_lettered).sum(),
            oldest_idle_since_ms: parts.iter().filter_map(|p| p.oldest_idle_since_ms).min(),
            average_idle_ms: if idle == 0 { 0 } else { idle_ms / idle as i64 },
            stuck: parts.iter().map(|p| p.stuck).sum(),
            claimed_total: parts.iter().map(|p| p.claimed_total).sum(),
            paused: parts.iter().any(|p| p.paused),
        })
    }
}
