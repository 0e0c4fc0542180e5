//! AgentService's entry points over sharded queues: an agent lives in shard CRC16(name) mod N
//! (see `store::shards`). Each method takes a queue's name and routes to its shards through the
//! per-shard layer (`Shard<Queues>`, in `queues::store`).

use std::{borrow::Cow, collections::BTreeMap};

use crate::error::{Error, Result};
use crate::queues::store::{
    Acquired, AgentDef, AgentInfo, AgentPage, Beat, Completed, Completion, Ended, HeartbeatItem, PagePosition, Queues,
};
use crate::store::shards::{head_score, in_turn, next_turn, Shard};
use crate::store::SourceKind;

impl Queues {
    /// Upserts definitions (see [`crate::flows::store::RegisterAnswer`]). On a sharded queue, one script per
    /// shard: atomic per shard, not across them. A retry with the same `request_id` gets the
    /// first call's answer (each shard's part).
    ///
    /// New agents with parents are created blocked in every shard first, then attached to
    /// their parents (which may be agents of this same call, in any shard).
    pub async fn register(
        &self,
        queue: &str,
        agents: &[AgentDef],
        reset: bool,
        request_id: &str,
    ) -> Result<crate::flows::store::RegisterAnswer> {
        let flows = agents.iter().any(|a| !a.after.is_empty());
        if flows {
            let mut queues: Vec<String> =
                agents.iter().map(|a| self.shard_of(SourceKind::Queue, queue, &a.name).into_owned()).collect();
            queues.extend(agents.iter().flat_map(|a| a.after.iter().map(|p| p.queue.clone())));
            queues.sort();
            queues.dedup();
            self.flows.remember_flow_queues(queues.iter().map(String::as_str)).await?;
        }
        // Positions in `agents`, by shard.
        let mut by_shard: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, def) in agents.iter().enumerate() {
            by_shard.entry(self.shard_of(SourceKind::Queue, queue, &def.name).into_owned()).or_default().push(i);
        }
        let mut out = crate::flows::store::RegisterAnswer {
            items: vec![
                crate::flows::store::RegisteredItem {
                    name: String::new(),
                    created: false,
                    deduplicated: false,
                    finish: None,
                    replaced: String::new(),
                    debounced: false,
                };
                agents.len()
            ],
            ..Default::default()
        };
        for (shard, positions) in &by_shard {
            let defs: Vec<AgentDef> = positions.iter().map(|&i| agents[i].clone()).collect();
            let part = Shard(self).register(shard, &defs, reset, request_id).await?;
            out.created += part.created;
            out.updated += part.updated;
            out.deduplicated += part.deduplicated;
            for (&i, item) in positions.iter().zip(part.items) {
                out.items[i] = item;
            }
        }
        if flows {
            for (shard, positions) in &by_shard {
                let children: Vec<(String, Vec<crate::flows::store::ParentRef>)> = positions
                    .iter()
                    .filter(|&&i| out.items[i].created && !agents[i].after.is_empty())
                    .map(|&i| (agents[i].name.clone(), agents[i].after.clone()))
                    .collect();
                self.flows.attach(shard, &children).await?;
            }
        }
        Ok(out)
    }

    /// Removes definitions; returns how many existed and, with `cascade`, how many children
    /// the cascade from them took (their descendants are then cancelled by the flows task).
    pub async fn unregister(&self, queue: &str, names: &[String], cascade: bool) -> Result<(u32, u32)> {
        let mut by_shard: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in names {
            by_shard.entry(self.shard_of(SourceKind::Queue, queue, name).into_owned()).or_default().push(name.clone());
        }
        let (mut removed, mut cascaded) = (0, 0);
        for (shard, names) in by_shard {
            let (r, c) = Shard(self).unregister(&shard, &names, cascade).await?;
            removed += r;
            cascaded += c;
        }
        Ok((removed, cascaded))
    }

    /// Grants up to `max` due agents to `worker`. On a sharded queue, first the acquire script
    /// on one shard, the next in turn: when it grants `max`, that is the whole call, one script
    /// as on an unsharded queue, so a grant costs the same at any shard count. Only when it
    /// falls short: one round of peeks at every other shard's earliest entry (and the Redis
    /// clock), then the script on the shards with something due — round-robin among them —
    /// until `max` are granted. The turn moves on every call, so each shard comes first once in
    /// N calls and none waits behind a busy one for longer. A shard whose node is known down
    /// (its breaker open) is skipped without a round trip, and a shard that fails is skipped
    /// too: the queue is served from the shards that answer, and fails only when none does.
    pub async fn acquire(&self, queue: &str, worker: &str, max: u32) -> Result<Acquired> {
        if self.shard_count(SourceKind::Queue, queue) == 1 {
            return Shard(self).acquire(queue, worker, max).await;
        }
        let shards = self.shard_names(SourceKind::Queue, queue);
        let waiting: Vec<String> = shards.iter().map(|shard| self.keys.queue(shard).waiting).collect();
        let live: Vec<usize> = (0..shards.len()).filter(|&i| !self.known_down(&waiting[i])).collect();
        if live.is_empty() {
            // Every shard's node is known down: fail fast as the breaker says.
            return Shard(self).acquire(&shards[0], worker, max).await;
        }
        // The first shard, straight to its script.
        let first = live[next_turn() % live.len()];
        let (mut failed, mut answered) = (None, false);
        let mut got = Acquired::default();
        let mut tried: Option<Option<i64>> = None;
        match Shard(self).acquire(&shards[first], worker, max).await {
            Ok(part) if part.leases.len() >= max as usize => return Ok(part),
            Ok(part) => {
                answered = true;
                tried = Some(part.next_due_ms);
                got = part;
            }
            Err(e @ (Error::Unavailable(_) | Error::CircuitOpen { .. })) => failed = Some(e),
            Err(e) => return Err(e),
        }
        let live: Vec<usize> = live.into_iter().filter(|&i| i != first).collect();
        if live.is_empty() {
            return match (answered, failed) {
                (false, Some(e)) => Err(e),
                _ => Ok(got),
            };
        }
        let keys: Vec<&str> = live.iter().map(|&i| waiting[i].as_str()).collect();
        let heads = keys.iter().map(|key| redis::cmd("ZRANGE").arg(key).arg(0).arg(0).arg("WITHSCORES").clone());
        let (now_ms, answers) = self.redis.each_settled(&keys, heads.collect()).await?;
        let mut heads: Vec<Option<i64>> = vec![None; shards.len()];
        for (&i, answer) in live.iter().zip(answers) {
            // A peek is a dispatch call like any: its failure counts toward the node's breaker.
            self.record_dispatch(&waiting[i], &answer);
            match answer {
                Ok(v) => {
                    heads[i] = head_score(v);
                    answered = true;
                }
                Err(e) => {
                    tracing::debug!(shard = shards[i], error = %e, "shard did not answer; skipped");
                    failed = Some(e)
                }
            }
        }
        let due = in_turn(shards.len(), |i| heads[i].is_some_and(|h| h <= now_ms));
        got.now_ms = got.now_ms.max(now_ms);
        // When to look again at each shard: what its script said (a paused shard, or one whose
        // due work its script held back, says so), or its head (a peek, no script).
        let mut again = heads.clone();
        if let Some(next) = tried {
            again[first] = next;
        }
        for i in due {
            let want = max - got.leases.len() as u32;
            if want == 0 {
                break;
            }
            match Shard(self).acquire(&shards[i], worker, want).await {
                Ok(part) => {
                    got.now_ms = part.now_ms;
                    got.leases.extend(part.leases);
                    again[i] = part.next_due_ms;
                }
                // Leases granted by other shards are held already: hand them over.
                Err(e @ (Error::Unavailable(_) | Error::CircuitOpen { .. })) => failed = Some(e),
                Err(e) => return Err(e),
            }
        }
        // No shard answered at all: the caller learns why (and retries).
        if let (false, Some(e)) = (answered, failed) {
            return Err(e);
        }
        if got.leases.len() < max as usize {
            got.next_due_ms = again.into_iter().flatten().min();
        }
        Ok(got)
    }

    /// Extends leases of one queue (and records their progress); per lease, what happened.
    pub async fn heartbeat(&self, queue: &str, worker: &str, leases: &[HeartbeatItem<'_>]) -> Result<Vec<Beat>> {
        if self.shard_count(SourceKind::Queue, queue) == 1 {
            return Shard(self).heartbeat(queue, worker, leases).await;
        }
        // Positions in `leases`, by shard.
        let mut by_shard: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, lease) in leases.iter().enumerate() {
            by_shard.entry(self.shard_of(SourceKind::Queue, queue, lease.0).into_owned()).or_default().push(i);
        }
        let mut out = vec![Beat::Lost; leases.len()];
        for (shard, positions) in by_shard {
            let pairs: Vec<HeartbeatItem> = positions.iter().map(|&i| leases[i]).collect();
            let deadlines = Shard(self).heartbeat(&shard, worker, &pairs).await?;
            for (i, deadline) in positions.into_iter().zip(deadlines) {
                out[i] = deadline;
            }
        }
        Ok(out)
    }

    /// Marks `worker` seen on every shard of `queue` where it holds leases (see `Shard::mark_seen`).
    pub async fn mark_seen(&self, queue: &str, worker: &str) -> Result<()> {
        let shards = self.shard_names(SourceKind::Queue, queue);
        let per_shard = Shard(self);
        futures::future::try_join_all(shards.iter().map(|s| per_shard.mark_seen(s, worker))).await.map(drop)
    }

    /// Takes back leases of `queue` that `worker` held on a stream that broke, as the orphan
    /// sweep would (ORPHANED, counted as an attempt), each only if the worker has not been seen
    /// within the last `silent_ms` (re-checked by the script). Returns how many were taken back.
    pub async fn reap_abandoned(
        &self,
        queue: &str,
        worker: &str,
        leases: &[(String, u64)],
        silent_ms: u64,
    ) -> Result<usize> {
        let mut by_shard: BTreeMap<String, Vec<crate::queues::sweep::Suspect>> = BTreeMap::new();
        for (name, token) in leases {
            let suspect = crate::queues::sweep::Suspect {
                name: name.clone(),
                token: token.to_string(),
                deadline_ms: 0,
                worker: worker.into(),
            };
            by_shard.entry(self.shard_of(SourceKind::Queue, queue, name).into_owned()).or_default().push(suspect);
        }
        let mut taken = 0;
        for (shard, suspects) in &by_shard {
            for chunk in self.policy.chunks(suspects) {
                let items: Vec<_> =
                    chunk.iter().map(|s| (s, crate::queues::sweep::ReapKind::Orphan, silent_ms)).collect();
                taken += self
                    .reap(shard, &items)
                    .await?
                    .iter()
                    .filter(|r| **r != crate::queues::sweep::Reaped::Skipped)
                    .count();
            }
        }
        Ok(taken)
    }

    /// Ends a lease with an outcome. A stale or unknown token is `Error::LeaseLost`.
    pub async fn complete(&self, c: &Completion) -> Result<Ended> {
        self.complete_batch(std::slice::from_ref(c))
            .await?
            .pop()
            .flatten()
            .ok_or_else(|| Error::LeaseLost(format!("{}/{} token {}", c.queue, c.name, c.token)))
    }

    /// Ends many leases, of any queues: one script per queue (per shard of a sharded queue), run
    /// side by side. Per item, in order, what happened, or None when its token was stale or
    /// unknown (that item changed nothing).
    pub async fn complete_batch(&self, items: &[Completion]) -> Result<Vec<Option<Ended>>> {
        Ok(self.complete_batch_with(items, true).await?.0)
    }

    /// complete_batch for a caller that acquires from `queue`, which has one shard, in the same
    /// round (a Session): the children of its queue these completions make due are not
    /// announced but answered, for the caller to announce unless its acquire took them all.
    pub(crate) async fn complete_batch_unannounced(
        &self,
        items: &[Completion],
    ) -> Result<(Vec<Option<Ended>>, crate::queues::store::Unannounced)> {
        self.complete_batch_with(items, false).await
    }

    /// Announces that agents of `queue` (one shard) became due.
    pub(crate) async fn announce_due(&self, queue: &str) -> Result<()> {
        Shard(self).announce_due(queue).await
    }

    async fn complete_batch_with(
        &self,
        items: &[Completion],
        announce: bool,
    ) -> Result<(Vec<Option<Ended>>, crate::queues::store::Unannounced)> {
        // A lease that ends by waiting takes a script of its own (waitAgent), so the plain
        // completions' script carries nothing for waits.
        let waits = futures::future::try_join_all(items.iter().enumerate().filter(|(_, c)| c.wait.is_some()).map(
            |(i, c)| async move {
                let wait = c.wait.as_ref().expect("filtered");
                let how = match self.wait(&c.queue, &c.name, c.token, wait, &c.request_id).await {
                    Err(Error::LeaseLost(_)) => None,
                    Err(e) => return Err(e),
                    Ok(crate::queues::store::Waited::Removed) => Some(Completed::Removed),
                    Ok(crate::queues::store::Waited::Waiting { streak, .. }) => {
                        Some(Completed::Waiting { next_run_ms: None, streak })
                    }
                    Ok(crate::queues::store::Waited::Due { at_ms, streak, .. }) => {
                        Some(Completed::Waiting { next_run_ms: Some(at_ms), streak })
                    }
                    Ok(crate::queues::store::Waited::Lost | crate::queues::store::Waited::Cancelled { .. }) => None,
                };
                Ok((i, how.map(|how| Ended { how, replayed: false })))
            },
        ));
        // Positions in `items`, by physical queue, in first-seen order.
        let mut groups: Vec<(Cow<'_, str>, Vec<usize>)> = Vec::new();
        for (i, c) in items.iter().enumerate().filter(|(_, c)| c.wait.is_none()) {
            let shard = self.shard_of(SourceKind::Queue, &c.queue, &c.name);
            match groups.iter_mut().find(|(q, _)| *q == shard) {
                Some((_, positions)) => positions.push(i),
                None => groups.push((shard, vec![i])),
            }
        }
        let done = futures::future::try_join_all(groups.iter().map(|(queue, positions)| {
            let batch: Vec<&Completion> = positions.iter().map(|&i| &items[i]).collect();
            async move { Shard(self).complete_batch(queue, &batch, announce).await }
        }));
        let (done, waits) = futures::future::try_join(done, waits).await?;
        let (mut out, mut due) = (vec![None; items.len()], Vec::new());
        for (i, ended) in waits {
            out[i] = ended;
        }
        for ((_, positions), (results, made_due)) in groups.into_iter().zip(done) {
            for (i, result) in positions.into_iter().zip(results) {
                out[i] = result;
            }
            due.extend(made_due);
        }
        Ok((out, due))
    }

    /// Hands a lease back; returns the next run, or None when the agent was unregistered.
    pub async fn release(&self, queue: &str, name: &str, token: u64, delay_ms: u64) -> Result<Option<i64>> {
        Shard(self).release(&self.shard_of(SourceKind::Queue, queue, name), name, token, delay_ms).await
    }

    /// Records a step of the run `token` holds (see [`crate::queues::store::StepAnswer`]).
    pub async fn record_step(
        &self,
        queue: &str,
        name: &str,
        token: u64,
        step: &str,
        result: &[u8],
    ) -> Result<crate::queues::store::StepAnswer> {
        Shard(self).record_step(&self.shard_of(SourceKind::Queue, queue, name), name, token, step, result).await
    }

    /// One agent's definition and state, or None.
    pub async fn get_agent(&self, queue: &str, name: &str) -> Result<Option<AgentInfo>> {
        Shard(self).get_agent(&self.shard_of(SourceKind::Queue, queue, name), name).await
    }

    /// A page of agents from `at` (None: the start), sorted by name, only names starting with
    /// `prefix` (empty: every name). A sharded queue is listed one shard after the other: a
    /// page comes from one shard, and the last page of a shard continues at the next.
    pub async fn list_agents(
        &self,
        queue: &str,
        at: Option<&PagePosition>,
        page_size: u32,
        prefix: &str,
    ) -> Result<AgentPage> {
        let shards = self.shard_names(SourceKind::Queue, queue);
        let start = at.cloned().unwrap_or(PagePosition { shard: 0, cursor: "0".into(), after: String::new() });
        let Some(shard) = shards.get(start.shard as usize) else {
            return Ok(AgentPage { agents: Vec::new(), next: None });
        };
        let mut page = Shard(self).list_agents(shard, &start.cursor, &start.after, page_size, prefix).await?;
        page.next = match page.next {
            Some(next) => Some(PagePosition { shard: start.shard, ..next }),
            None if (start.shard as usize) + 1 < shards.len() => {
                Some(PagePosition { shard: start.shard + 1, cursor: "0".into(), after: String::new() })
            }
            None => None,
        };
        Ok(page)
    }
}
