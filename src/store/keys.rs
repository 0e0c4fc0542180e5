//! The one place Redis key names are built. Every key of one queue shares the hash tag
//! `{q:<queue>}`, so every script's keys live in one Redis Cluster slot. Names are validated
//! before they get here (no `{`, `}` or `:`), so a name cannot change the slot or alias a key.

/// Builds key names under a configurable prefix.
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: String,
    /// Scripts announce with SPUBLISH (Redis Cluster: sharded pub/sub) instead of PUBLISH.
    sharded: bool,
}

/// What a pub/sub channel announces; every channel carries the hash tag of its source, so a
/// script publishes (SPUBLISH on a cluster) in the slot of its own keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// A queue's agents became due earlier: the payload is the queue name.
    Queue,
    /// A receiver's messages became due earlier: the payload is `r:<receiver>`.
    Receiver,
    /// A pool's events: "A|pool|claim id" (a waiting claim was handed a resource), "C|pool".
    Pool,
    /// An election's events: elected, resigned, expired.
    Election,
}

/// The keys of one agent queue.
#[derive(Clone, Debug)]
pub struct QueueKeys {
    /// ZSET name -> next run (ms).
    pub waiting: String,
    /// ZSET name -> lease deadline (ms).
    pub working: String,
    /// HASH name -> definition JSON.
    pub defs: String,
    /// HASH name -> payload bytes.
    pub payloads: String,
    /// HASH name -> "token|worker|acquired_at|timeout_ms".
    pub leases: String,
    /// HASH name -> consecutive failures.
    pub streaks: String,
    /// STRING: the fencing token counter.
    pub seq: String,
    /// ZSET name -> dead-lettered at (ms).
    pub dlq: String,
    /// HASH name -> dead-letter context JSON.
    pub dlqinfo: String,
    /// ZSET worker id -> last seen (ms): liveness of the workers of this queue.
    pub workers: String,
    /// HASH completed, failed, dead_lettered -> counts (processing rate in health).
    pub stats: String,
    /// HASH flow control: paused, concurrency, rate, burst, key_concurrency, key_rate, key_burst
    /// (AdminService.SetLimits / Pause), the token bucket's state (tokens, at), "blocked", and
    /// a keyed queue's state: "keyed", "vtime" (virtual time), per key `held|<key>` (leases held) and `bucket|<key>`
    /// (its bucket, "tokens|at") (see acquireAgents); per key `key|<key>` (its weight and overrides,
    /// SetKeyLimits) and "key_limits" (how many keys have one); a recount's state (recountKeys).
    pub limits: String,
    /// ZSET key -> 0: the keys with a weight or overrides (SetKeyLimits), for listing in key order.
    pub keylimits: String,
    /// HASH name -> "token|next fire (ms)": the next fire of a cron agent's latest run.
    pub cron: String,
    /// ZSET name -> priority rank * 2^42 + tag: a keyed queue's due agents in dispatch order
    /// (priority first, then round-robin across keys; see acquireAgents).
    pub order: String,
    /// HASH key -> the tag of its last promoted agent (a keyed queue's fair-queuing state).
    pub tags: String,
    /// ZSET request field -> remembered at (ms): the request ids whose first answer is kept.
    pub requests: String,
    /// HASH request field -> the first answer (JSON), for idempotent retries.
    pub answers: String,
    /// HASH name -> result record: how the agent last finished (`lua/includes/finished.lua`).
    pub results: String,
    /// ZSET name -> until when its result record is kept (ms).
    pub resultsat: String,
    /// SET of names with children attached (each has a `children:<name>`).
    pub fanout: String,
    /// The base of each parent's ZSET of children, `children:<parent>` (lex "<child queue>|<child>"),
    /// and of a finish's frozen set, `children:<parent>|<seq>` (`lua/includes/finished.lua`).
    pub children: String,
    /// ZSET "<parent>|<seq>" -> written at (ms): finishes whose children are being released.
    pub outbox: String,
    /// HASH "<parent>|<seq>" -> result record, "<parent>|<seq>#" -> release cursor, "#" -> seq.
    pub outboxres: String,
    /// ZSET name -> awaited until (ms): agents an Await waits for (their finish is announced).
    pub awaited: String,
    /// The base of each blocked agent's HASH of parents, `deps:<child>`: "<parent queue>|<parent>"
    /// -> "p<policy>" while pending, else the parent's result record as it released the child.
    pub deps: String,
    /// HASH child -> parents still pending: the blocked agents.
    pub pending: String,
    /// ZSET child -> registered at (ms): blocked agents whose parents are not all attached yet
    /// (a crash in between is repaired by the flows sweep).
    pub unattached: String,
    /// HASH idempotency key -> "<name>|<held until ms>".
    pub dedup: String,
    /// ZSET idempotency key -> held until (ms).
    pub dedupat: String,
    /// HASH name -> the steps its current run recorded (`lua/includes/stepRecord.lua`); only
    /// agents that recorded a step have an entry, and it goes when the run ends.
    pub steps: String,
    /// ZSET name -> expire at (ms): agents with an expiry (`Agent.expire_at`, `ttl`) whose
    /// first run has not started, for the sweeper; written only for such agents.
    pub expiring: String,
    /// HASH name -> "<event>|<until ms>|<since ms>": the agents waiting for an event or a time
    /// (`CompleteRequest.wait_for`, `Agent.wait_for`); written only for them.
    pub waits: String,
    /// ZSET name -> until (ms): the waits with a time, for the timers' sweeper step.
    pub waitat: String,
    /// HASH: the queue's shared concurrency group (`lua/includes/groupLimits.lua`): its limits
    /// and held counts, `{g:<group>}:limits`. A queue in no group gets `{q:<queue>}:group`, a key
    /// of its own slot that no script touches ([`QueueKeys::in_group`] sets the group's).
    pub group: String,
    /// SET "<queue>|<channel>": the group's member queues held back by it; `{q:<queue>}:groupblocked`
    /// (never touched) for a queue in no group.
    pub groupblocked: String,
}

/// The keys of one shared concurrency group (AdminService.SetGroupLimits), tagged `{g:<group>}`.
#[derive(Clone, Debug)]
pub struct GroupKeys {
    /// HASH concurrency, rate, burst, key_concurrency, the bucket's tokens and at, "created";
    /// held, "held|<key>": leases granted under the group and not ended, over every member queue.
    pub limits: String,
    /// SET "<queue>|<channel>": member queues whose Acquire the group held back.
    pub blocked: String,
}

/// The keys of one pool; the pool scripts (`lua/pools/`) take them as `KEYS of PoolKeys`.
#[derive(Clone, Debug)]
pub struct PoolKeys {
    /// ZSET resource id -> ready-queue order.
    pub idle: String,
    /// HASH resource id -> offered attributes JSON.
    pub resources: String,
    /// ZSET resource id -> claimed at (ms).
    pub claimed: String,
    /// HASH resource id -> "token|claimer|claimed_at|attributes JSON".
    pub claims: String,
    /// ZSET claim id -> arrival (ms): the waiting line.
    pub line: String,
    /// HASH claim id -> "claimer|wait deadline|attributes JSON".
    pub lineinfo: String,
    /// HASH claim id -> "resource id|token|wait deadline": handed, not yet picked up.
    pub assigned: String,
    /// STRING counter: tokens, claim ids, ready-queue order.
    pub seq: String,
    /// STRING "1" while the scale-up signal is raised.
    pub scaleup: String,
    /// ZSET resource id -> dead-lettered at (ms).
    pub dlq: String,
    /// HASH resource id -> dead-letter context JSON.
    pub dlqinfo: String,
    /// HASH resource id -> idle since (ms).
    pub idleat: String,
    /// HASH claimed, offered, dead_lettered -> counts (processing rate in health).
    pub stats: String,
    /// HASH flow control: paused (AdminService.Pause).
    pub limits: String,
    /// ZSET request field -> remembered at (ms): the request ids whose first answer is kept.
    pub requests: String,
    /// HASH request field -> the first answer (JSON), for idempotent retries.
    pub answers: String,
    /// ZSET "resource id|token" -> hold deadline (ms): claims taken with a hold.
    pub holds: String,
}

impl PoolKeys {
    /// The keys of the scripts that remember answers and keep holds (claimResource,
    /// pickupClaim, endClaim): every pool key, then requests, answers and holds.
    pub fn with_memory(&self) -> [&str; 17] {
        let [a, b, c, d, e, f, g, h, i, j, k, l, m, n] = self.all();
        [a, b, c, d, e, f, g, h, i, j, k, l, m, n, &self.requests, &self.answers, &self.holds]
    }

    pub fn all(&self) -> [&str; 14] {
        [
            &self.idle,
            &self.resources,
            &self.claimed,
            &self.claims,
            &self.line,
            &self.lineinfo,
            &self.assigned,
            &self.seq,
            &self.scaleup,
            &self.dlq,
            &self.dlqinfo,
            &self.idleat,
            &self.stats,
            &self.limits,
        ]
    }
}

/// The keys of one receiver, in the order every receiver script takes them
/// (`lua/receivers/` takes them as `KEYS of ReceiverKeys`).
#[derive(Clone, Debug)]
pub struct ReceiverKeys {
    /// ZSET id -> deliver at (ms).
    pub scheduled: String,
    /// ZSET id -> ack deadline (ms).
    pub inflight: String,
    /// HASH id -> payload bytes.
    pub messages: String,
    /// HASH id -> "deliver_at|delivery_count|key".
    pub meta: String,
    /// HASH idempotency key -> id.
    pub keys: String,
    /// HASH id -> "token|consumer|delivered_at" while in flight.
    pub tokens: String,
    /// HASH consumer id -> messages in flight.
    pub consumers: String,
    /// STRING counter: ids and tokens.
    pub seq: String,
    /// ZSET id -> dead-lettered at (ms).
    pub dlq: String,
    /// HASH id -> dead-letter context JSON.
    pub dlqinfo: String,
    /// HASH scheduled, delivered, redelivered, acked, dead_lettered -> counts.
    pub stats: String,
    /// HASH flow control: paused (AdminService.Pause).
    pub limits: String,
    /// ZSET request field -> remembered at (ms): the request ids whose first answer is kept.
    pub requests: String,
    /// HASH request field -> the first answer (JSON), for idempotent retries.
    pub answers: String,
    /// HASH idempotency key -> "<id>|<deliver at ms>|<held until ms>": keys held for a window
    /// (`ScheduleRequest.key_window`), whatever became of their message.
    pub dedup: String,
    /// ZSET idempotency key -> held until (ms): the windows by their end, to drop lapsed ones.
    pub dedupat: String,
}

impl ReceiverKeys {
    /// The keys of the scripts that remember answers (scheduleMessage, ackMessages): every
    /// receiver key, then requests and answers.
    pub fn with_memory(&self) -> [&str; 13] {
        let [a, b, c, d, e, f, g, h, i, j, k] = self.all();
        [a, b, c, d, e, f, g, h, i, j, k, &self.requests, &self.answers]
    }

    /// The keys of scheduleMessage: `with_memory`, then dedup and dedupat.
    pub fn schedule_keys(&self) -> [&str; 15] {
        let [a, b, c, d, e, f, g, h, i, j, k, l, m] = self.with_memory();
        [a, b, c, d, e, f, g, h, i, j, k, l, m, &self.dedup, &self.dedupat]
    }

    pub fn all(&self) -> [&str; 11] {
        [
            &self.scheduled,
            &self.inflight,
            &self.messages,
            &self.meta,
            &self.keys,
            &self.tokens,
            &self.consumers,
            &self.seq,
            &self.dlq,
            &self.dlqinfo,
            &self.stats,
        ]
    }
}

/// The keys of one election.
#[derive(Clone, Debug)]
pub struct ElectionKeys {
    /// HASH token, candidate, expires_at, ttl, active: the current (or last) term.
    pub term: String,
    /// STRING: the fencing token counter.
    pub seq: String,
    /// LIST "token|leader|started_at|ended_at|how", newest first: the last terms (capped).
    pub history: String,
}

impl QueueKeys {
    /// These keys with the group's in place of the placeholders ("" keeps them: no group).
    pub fn in_group(mut self, keys: &Keys, group: &str) -> Self {
        if !group.is_empty() {
            let g = keys.group(group);
            self.group = g.limits;
            self.groupblocked = g.blocked;
        }
        self
    }

    /// The twenty-two keys of acquireAgents (the plain path), in its order (the bench calls the
    /// script with them too): the grant's, what an agent expired at grant time needs, then the
    /// steps.
    pub fn acquire_keys(&self) -> [&str; 22] {
        [
            &self.waiting,
            &self.working,
            &self.defs,
            &self.payloads,
            &self.leases,
            &self.streaks,
            &self.seq,
            &self.workers,
            &self.limits,
            &self.stats,
            &self.expiring,
            &self.results,
            &self.resultsat,
            &self.fanout,
            &self.children,
            &self.outbox,
            &self.outboxres,
            &self.awaited,
            &self.deps,
            &self.steps,
            &self.group,
            &self.groupblocked,
        ]
    }
}

impl Keys {
    pub fn new(prefix: impl Into<String>) -> Self {
        Self { prefix: prefix.into(), sharded: false }
    }

    /// Keys whose scripts announce with sharded pub/sub (SPUBLISH), for Redis Cluster.
    pub fn sharded(mut self, sharded: bool) -> Self {
        self.sharded = sharded;
        self
    }

    /// The configured prefix of every key and channel.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether scripts announce with SPUBLISH.
    pub fn is_sharded(&self) -> bool {
        self.sharded
    }

    /// The pub/sub channel of one source: `<prefix>baton:{q:billing}:wake`.
    pub fn channel(&self, kind: ChannelKind, name: &str) -> String {
        if let (ChannelKind::Queue, Some(batch)) = (kind, name.strip_prefix('~')) {
            // A batch's finishes are announced in its own slot (nobody follows them yet).
            return format!("{}baton:{{b:{batch}}}:wake", self.prefix);
        }
        let (tag, part) = match kind {
            ChannelKind::Queue => ('q', "wake"),
            ChannelKind::Receiver => ('r', "wake"),
            ChannelKind::Pool => ('p', "events"),
            ChannelKind::Election => ('e', "events"),
        };
        format!("{}baton:{{{tag}:{name}}}:{part}", self.prefix)
    }

    /// What a channel announces, from its name (None: not one of this prefix's channels).
    pub fn parse_channel(&self, channel: &str) -> Option<ChannelKind> {
        let rest = channel.strip_prefix(self.prefix.as_str())?.strip_prefix("baton:{")?;
        let (tag, part) = rest.rsplit_once("}:")?;
        match (tag.split_once(':')?.0, part) {
            ("q", "wake") => Some(ChannelKind::Queue),
            ("r", "wake") => Some(ChannelKind::Receiver),
            ("p", "events") => Some(ChannelKind::Pool),
            ("e", "events") => Some(ChannelKind::Election),
            _ => None,
        }
    }

    /// The ARGV by which a script learns where to announce (`publish` in
    /// `lua/includes/publish.lua`): "P <channel>" (PUBLISH) or "S <channel>" (SPUBLISH).
    pub fn announce(&self, kind: ChannelKind, name: &str) -> String {
        format!("{} {}", if self.sharded { 'S' } else { 'P' }, self.channel(kind, name))
    }

    /// The channel where scripts announce that a queue has new outbox entries (children to
    /// release): `<prefix>baton:flows:outbox`, carrying the queue's name. It belongs to no slot:
    /// scripts PUBLISH on it (also on Redis Cluster, where a PUBLISH reaches every node's
    /// subscribers), and every replica follows it (`Wakeups::outboxes`).
    pub fn outbox_channel(&self) -> String {
        format!("{}baton:flows:outbox", self.prefix)
    }

    /// The ARGV by which a script that records finishes learns where to announce: the queue's
    /// target ([`Keys::announce`]), then a line with the outbox channel (`announceOutbox` in
    /// `lua/includes/publish.lua`).
    pub fn announce_finishes(&self, queue: &str) -> String {
        format!("{}\n{}", self.announce(ChannelKind::Queue, queue), self.outbox_channel())
    }

    pub fn queue(&self, queue: &str) -> QueueKeys {
        // A batch's own keys (`store::batches`): "~<batch>" is a queue no user can name.
        let (tag, name) = match queue.strip_prefix('~') {
            Some(batch) => ('b', batch),
            None => ('q', queue),
        };
        let k = |part: &str| format!("{}baton:{{{tag}:{name}}}:{part}", self.prefix);
        QueueKeys {
            waiting: k("waiting"),
            working: k("working"),
            defs: k("defs"),
            payloads: k("payloads"),
            leases: k("leases"),
            streaks: k("streaks"),
            seq: k("seq"),
            dlq: k("dlq"),
            dlqinfo: k("dlqinfo"),
            workers: k("workers"),
            stats: k("stats"),
            limits: k("limits"),
            keylimits: k("keylimits"),
            cron: k("cron"),
            order: k("order"),
            tags: k("tags"),
            requests: k("requests"),
            answers: k("answers"),
            results: k("results"),
            resultsat: k("resultsat"),
            fanout: k("fanout"),
            children: k("children"),
            outbox: k("outbox"),
            outboxres: k("outboxres"),
            awaited: k("awaited"),
            deps: k("deps"),
            pending: k("pending"),
            unattached: k("unattached"),
            dedup: k("dedup"),
            dedupat: k("dedupat"),
            steps: k("steps"),
            expiring: k("expiring"),
            waits: k("waits"),
            waitat: k("waitat"),
            group: k("group"),
            groupblocked: k("groupblocked"),
        }
    }

    /// The keys of a shared concurrency group.
    pub fn group(&self, group: &str) -> GroupKeys {
        let k = |part: &str| format!("{}baton:{{g:{group}}}:{part}", self.prefix);
        GroupKeys { limits: k("limits"), blocked: k("blocked") }
    }

    /// ZSET group -> 0: every shared concurrency group, in name order (ListGroupLimits).
    pub fn groups(&self) -> String {
        format!("{}baton:{{registry}}:groups", self.prefix)
    }

    /// The keys of one election.
    pub fn election(&self, election: &str) -> ElectionKeys {
        let k = |part: &str| format!("{}baton:{{e:{election}}}:{part}", self.prefix);
        ElectionKeys { term: k("term"), seq: k("seq"), history: k("history") }
    }

    /// The keys of one pool.
    pub fn pool(&self, pool: &str) -> PoolKeys {
        let k = |part: &str| format!("{}baton:{{p:{pool}}}:{part}", self.prefix);
        PoolKeys {
            idle: k("idle"),
            resources: k("resources"),
            claimed: k("claimed"),
            claims: k("claims"),
            line: k("line"),
            lineinfo: k("lineinfo"),
            assigned: k("assigned"),
            seq: k("seq"),
            scaleup: k("scaleup"),
            dlq: k("dlq"),
            dlqinfo: k("dlqinfo"),
            idleat: k("idleat"),
            stats: k("stats"),
            limits: k("limits"),
            requests: k("requests"),
            answers: k("answers"),
            holds: k("holds"),
        }
    }

    /// HASH: the last health check: "status", "checked_at", and "<kind>:<name>" -> JSON figures.
    pub fn health(&self) -> String {
        format!("{}baton:{{registry}}:health", self.prefix)
    }

    /// The keys of one receiver.
    pub fn receiver(&self, receiver: &str) -> ReceiverKeys {
        let k = |part: &str| format!("{}baton:{{r:{receiver}}}:{part}", self.prefix);
        ReceiverKeys {
            scheduled: k("scheduled"),
            inflight: k("inflight"),
            messages: k("messages"),
            meta: k("meta"),
            keys: k("keys"),
            tokens: k("tokens"),
            consumers: k("consumers"),
            seq: k("seq"),
            dlq: k("dlq"),
            dlqinfo: k("dlqinfo"),
            stats: k("stats"),
            limits: k("limits"),
            requests: k("requests"),
            answers: k("answers"),
            dedup: k("dedup"),
            dedupat: k("dedupat"),
        }
    }

    /// SET of every receiver ever scheduled to.
    pub fn receivers(&self) -> String {
        format!("{}baton:{{registry}}:receivers", self.prefix)
    }

    /// SET of every pool ever offered to or claimed from.
    pub fn pools(&self) -> String {
        format!("{}baton:{{registry}}:pools", self.prefix)
    }

    /// SET of every queue ever registered, for sweepers and health.
    pub fn queues(&self) -> String {
        format!("{}baton:{{registry}}:queues", self.prefix)
    }

    /// ZSET queue -> when it was last marked (ms, Redis time): the queues that may hold
    /// leases or worker records, which the sweepers walk (`store::active`).
    pub fn active(&self) -> String {
        format!("{}baton:{{registry}}:active", self.prefix)
    }

    /// SET of the queues (physical) that have had parents or children (`Agent.after`): the flows
    /// sweep walks them for outbox entries and unattached children a crash left behind.
    pub fn flows(&self) -> String {
        format!("{}baton:{{registry}}:flows", self.prefix)
    }

    /// SET of the queues (physical) that have had an agent with an expiry (`Agent.expire_at`,
    /// `ttl`): the sweeper walks their `expiring` sets.
    pub fn expiring_queues(&self) -> String {
        format!("{}baton:{{registry}}:expiring", self.prefix)
    }

    /// SET of the queues (physical) that have had a wait with a time (`WaitFor.until`,
    /// `timeout`): the sweeper walks their `waitat` sets.
    pub fn timer_queues(&self) -> String {
        format!("{}baton:{{registry}}:timers", self.prefix)
    }

    /// ZSET election name -> when its latest term began (ms, Redis time): every election a
    /// term was started in. Written after the term's script (one slot per command).
    pub fn elections(&self) -> String {
        format!("{}baton:{{registry}}:elections", self.prefix)
    }

    /// HASH "<sweep>:<replica>" -> passes run: which replica did the cluster-wide sweeps.
    pub fn sweeps(&self) -> String {
        format!("{}baton:{{registry}}:sweeps", self.prefix)
    }

    /// A SCAN pattern matching every key of every queue, pool, receiver and election.
    pub fn source_pattern(&self) -> String {
        // Glob-escape the prefix, so a prefix with `*`, `?` or `[` matches only itself.
        let mut escaped = String::new();
        for c in self.prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        format!("{escaped}baton:{{[qpre]:*}}:*")
    }

    /// The (kind, name, part) of a key matched by `source_pattern`: kind is `q`, `p`, `r` or `e`.
    pub fn parse_source<'a>(&self, key: &'a str) -> Option<(char, &'a str, &'a str)> {
        let rest = key.strip_prefix(self.prefix.as_str())?.strip_prefix("baton:{")?;
        let (tag, part) = rest.split_once("}:")?;
        let (kind, name) = tag.split_once(':')?;
        let kind = match kind {
            "q" => 'q',
            "p" => 'p',
            "r" => 'r',
            "e" => 'e',
            _ => return None,
        };
        Some((kind, name, part))
    }
}

/// The name a receiver is announced by on the wake channel (queue names cannot hold ':').
pub fn wake_name(receiver: &str) -> String {
    format!("r:{receiver}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keys_share_one_hash_tag() {
        let k = Keys::new("app:").queue("billing");
        assert_eq!(k.waiting, "app:baton:{q:billing}:waiting");
        for key in [&k.working, &k.defs, &k.payloads, &k.leases, &k.streaks, &k.seq, &k.dlq, &k.dlqinfo, &k.workers] {
            assert!(key.contains("{q:billing}"), "{key}");
        }
    }

    #[test]
    fn source_keys_parse_back() {
        let keys = Keys::new("a*p:");
        assert_eq!(keys.source_pattern(), "a\\*p:baton:{[qpre]:*}:*");
        assert_eq!(keys.parse_source(&keys.queue("billing").workers), Some(('q', "billing", "workers")));
        assert_eq!(keys.parse_source(keys.pool("vms").all()[0]), Some(('p', "vms", "idle")));
        assert_eq!(keys.parse_source(&keys.election("primary").history), Some(('e', "primary", "history")));
        assert_eq!(keys.parse_source("a*p:baton:{registry}:queues"), None);
        assert_eq!(keys.parse_source("other:baton:{q:x}:defs"), None);
    }

    #[test]
    fn channels_share_their_source_hash_tag_and_parse_back() {
        let keys = Keys::new("app:");
        for (kind, tag) in [
            (ChannelKind::Queue, "{q:jobs}"),
            (ChannelKind::Receiver, "{r:jobs}"),
            (ChannelKind::Pool, "{p:jobs}"),
            (ChannelKind::Election, "{e:jobs}"),
        ] {
            let channel = keys.channel(kind, "jobs");
            assert!(channel.contains(tag), "{channel}");
            assert_eq!(keys.parse_channel(&channel), Some(kind));
        }
        assert_eq!(keys.parse_channel("app:baton:{q:jobs}:waiting"), None);
        assert_eq!(keys.announce(ChannelKind::Queue, "a"), "P app:baton:{q:a}:wake");
        assert_eq!(keys.sharded(true).announce(ChannelKind::Pool, "a"), "S app:baton:{p:a}:events");
    }
}
