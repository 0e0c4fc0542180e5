//! The records of a queue stored in Redis, each with its encoder and parser side by side; their
//! Lua side is one include per record, tested against this one (`tests` below).
//!
//! - The lease record (`lua/includes/leaseRecord.lua`): written by the scripts only, read here
//!   by ListAgents.
//! - The definition (`lua/includes/defField.lua`): JSON written here, read by the scripts
//!   without decoding it; registerAgents appends `"parents":n`.
//! - The steps of a run (`lua/includes/stepRecord.lua`): written by recordStep only, read here
//!   for a lease, GetAgent and Await.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A lease record, "token|worker|acquired_at|timeout_ms[@key][!group][|flags|progress]": the
/// shared concurrency group it was granted under after '!'; flags hold "c" when CancelRun marked
/// the run, or "k" when a cascade did (both read as `cancel`), and "w<n>" while a WatchAgent
/// stream watches it (n: the number of its last update); progress, as the holder last reported
/// it, comes last and may hold
/// '|'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    pub token: u64,
    pub worker: String,
    pub acquired_at_ms: i64,
    pub timeout_ms: u64,
    /// The key of a keyed agent's lease; None for a plain lease.
    pub key: Option<String>,
    /// The shared concurrency group the lease was granted under; None for none.
    pub group: Option<String>,
    pub cancel: bool,
    /// Watched (WatchAgent): the number of the lease's last update; None when not watched.
    pub watch: Option<u64>,
    pub progress: String,
}

impl LeaseRecord {
    /// The record as the scripts write it (Baton itself never writes one).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> String {
        let mut rec = format!("{}|{}|{}|{}", self.token, self.worker, self.acquired_at_ms, self.timeout_ms);
        if let Some(key) = self.key.as_deref().filter(|k| !k.is_empty()) {
            rec.push('@');
            rec.push_str(key);
        }
        if let Some(group) = self.group.as_deref().filter(|g| !g.is_empty()) {
            rec.push('!');
            rec.push_str(group);
        }
        if self.cancel || self.watch.is_some() || !self.progress.is_empty() {
            rec.push('|');
            rec.push_str(if self.cancel { "c" } else { "" });
            if let Some(n) = self.watch {
                rec.push_str(&format!("w{n}"));
            }
            rec.push('|');
            rec.push_str(&self.progress);
        }
        rec
    }

    /// The record's fields, or None when it is not a lease record.
    pub(crate) fn parse(rec: &str) -> Option<Self> {
        let mut fields = rec.splitn(6, '|');
        let token = fields.next()?.parse().ok()?;
        let worker = fields.next()?.to_string();
        let acquired_at_ms = fields.next()?.parse().ok()?;
        let raw = fields.next()?;
        let (fourth, group) = match raw.split_once('!') {
            Some((f, g)) => (f, Some(g.to_string())),
            None => (raw, None),
        };
        let (timeout, key) = match fourth.split_once('@') {
            Some((t, k)) => (t, Some(k.to_string())),
            None => (fourth, None),
        };
        let timeout_ms = timeout.parse().ok()?;
        let flags = fields.next().unwrap_or("");
        let progress = fields.next().unwrap_or("").to_string();
        let watch = flags.split_once('w').and_then(|(_, n)| n.parse().ok());
        let cancel = flags.contains('c') || flags.contains('k');
        Some(Self { token, worker, acquired_at_ms, timeout_ms, key, group, cancel, watch, progress })
    }
}

/// An agent's definition, as stored: JSON (`record`, `parse`), the payload stored beside it,
/// binary-safe. The scripts read it without decoding it (`lua/includes/defField.lua`), which
/// asks of this encoding: the whole-number fields they read are top-level and written as plain
/// digits; every field that is 0 or empty is left out, and an absent field reads 0 (or empty)
/// on both sides; `key` comes first and `ptp` last, where registerAgents finds them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentDef {
    #[serde(skip)]
    pub name: String,
    /// Flow-control key (per-key limits, fairness); "" for none. Serialized first, so the
    /// scripts find it at the start of the JSON (`{"key":"…"`), where no label can be.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Higher first among due agents, -1000..=1000; serialized only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// 0: one-shot. Like every field that is 0 or empty, not stored when 0: a million waiting
    /// one-shots carry no zeros (the scripts read an absent field as 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interval_ms: u64,
    pub timeout_ms: u64,
    pub error_interval_ms: u64,
    /// 0: unlimited.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_attempts: u32,
    /// When a one-shot agent expires if no run has started (ms, Redis clock; `Agent.expire_at`,
    /// or the Register's Redis time plus `Agent.ttl`); 0: none. Only while no run has started:
    /// the grant that starts the first run drops it from the stored definition (acquire
    /// scripts, `grantLeases`). Always after `timeout_ms`, so the scripts find it as
    /// `,"expire_at_ms":<digits>` (`defField`), which no label can be.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expire_at_ms: i64,
    /// Keep the agent's finish (`Agent.keep_result`, or set by Baton at Register for an
    /// idempotency key, a batch member, a parent named in the same call, a queue of
    /// `results.keep_queues`); stored as `"keep":true` only when set, which the scripts look for
    /// (keepsFinish): a plain one-shot's finish writes nothing.
    #[serde(default, rename = "keep", skip_serializing_if = "std::ops::Not::not")]
    pub keep_result: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip)]
    pub payload: Vec<u8>,
    /// A cron expression instead of an interval (`crate::cron`); "" for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cron: String,
    /// The cron expression's IANA time zone; "" is UTC.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub time_zone: String,
    /// Catch-up policy of a cron agent: skip a run that starts after the fire following its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub catch_up_skip: bool,
    /// Written at Register only: a new (or reset) cron agent's first fire, which registerAgents
    /// uses as its first run; set by the store from the Redis clock (`Queues::register`), so
    /// whatever a caller puts here is replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_fire_ms: Option<i64>,
    /// W3C trace context of the producer's call, handed to workers with every lease; "" for none.
    #[serde(default, rename = "tp", skip_serializing_if = "String::is_empty")]
    pub traceparent: String,
    /// How many parents the agent has (written by registerAgents when it is created with
    /// parents, kept by later registrations); 0 for none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parents: u32,
    /// The trace context of each of the agent's first parents that carried one, as it was when
    /// the agent was created: "<physical queue>|<name>" -> traceparent (`trace::MAX_LINKS` at
    /// most), handed out with the lease's parents. Serialized last, before the `parents` that
    /// registerAgents appends, which keeps it on later registrations.
    #[serde(default, rename = "ptp", skip_serializing_if = "BTreeMap::is_empty")]
    pub parent_traceparents: BTreeMap<String, String>,
    /// Register only: the parents of a new agent (`Agent.after`), physical queues.
    #[serde(skip)]
    pub after: Vec<crate::flows::store::ParentRef>,
    /// Register only: the idempotency key, its window and mode.
    #[serde(skip)]
    pub idempotency: Option<Idempotency>,
    /// Register only: `Agent.ttl` (ms), turned into `expire_at_ms` from the Redis clock of the
    /// queue's slot (`Queues::register`); 0: none.
    #[serde(skip)]
    pub ttl_ms: u64,
    /// Register only: a new agent waits for this before its first run (`Agent.wait_for`).
    #[serde(skip)]
    pub wait_for: Option<WaitFor>,
}

/// A wait for an event, a time, or the first of both (`pb::WaitFor`): how a run ends its lease
/// by waiting (`CompleteRequest.wait_for`), or a new agent waits before its first run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitFor {
    /// The event waited for; "" for a time only.
    pub event: String,
    /// Wait at most until then (ms, Redis clock); 0: no such bound.
    pub until_ms: u64,
    /// Wait at most this long from the wait's start (ms); 0: no such bound.
    pub timeout_ms: u64,
}

impl WaitFor {
    /// registerAgents' item: "<event>|<until ms>|<timeout ms>".
    pub(crate) fn arg(&self) -> String {
        format!("{}|{}|{}", self.event, self.until_ms, self.timeout_ms)
    }
}

/// An agent waiting for an event or a time (HASH `waits`; `lua/includes/waitRecord.lua`):
/// `"<event>|<until ms>|<since ms>"`, event "" for a time only, until 0 for none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitRecord {
    pub event: String,
    pub until_ms: i64,
    pub since_ms: i64,
}

impl WaitRecord {
    /// The record written by waitRecord's `encodeWait` (Baton's Rust side never writes one).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> String {
        format!("{}|{}|{}", self.event, self.until_ms, self.since_ms)
    }

    /// None when `rec` is not a wait record.
    pub(crate) fn parse(rec: &str) -> Option<Self> {
        let mut f = rec.split('|');
        let event = f.next()?.to_string();
        let until_ms = f.next()?.parse().ok()?;
        let since_ms = f.next()?.parse().ok()?;
        f.next().is_none().then_some(WaitRecord { event, until_ms, since_ms })
    }
}

/// The event a run's leases carry after a wait (`pb::EventDelivery`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    pub event: String,
    pub payload: Vec<u8>,
    /// When the signal was sent, or when the wait timed out (ms, Redis clock).
    pub at_ms: i64,
    /// The wait's time passed before the event came (no payload).
    pub timed_out: bool,
}

/// What a run's record holds besides its steps (stepRecord): its signals and its delivery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunEvents {
    /// The run's delivery: its last consumed ('!') or timed-out ('~') entry.
    pub delivery: Option<Delivery>,
    /// Signals kept for a wait that names them ('?').
    pub pending: u32,
}

impl RunEvents {
    /// The events of a run's record; empty when `rec` is none or not a steps record.
    pub(crate) fn parse(rec: &[u8]) -> Self {
        let mut out = RunEvents::default();
        for e in StepRecord::parse_entries(rec).unwrap_or_default() {
            match e.name.as_bytes().first() {
                Some(b'?') => out.pending += 1,
                Some(&mark @ (b'!' | b'~')) => {
                    out.delivery = Some(Delivery {
                        event: e.name[1..].to_string(),
                        payload: e.result,
                        at_ms: e.recorded_at_ms,
                        timed_out: mark == b'~',
                    })
                }
                _ => {}
            }
        }
        out
    }
}

/// An agent's idempotency key as Register takes it (`Agent.idempotency_key` and the fields
/// beside it).
#[derive(Clone, Debug, PartialEq)]
pub struct Idempotency {
    pub key: String,
    /// How long the key is held (ms).
    pub window_ms: u64,
    pub mode: IdempotencyMode,
}

/// What a registration whose key is held does (`pb::IdempotencyMode`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IdempotencyMode {
    KeepFirst,
    Replace,
    /// Due this long (ms) after the latest registration.
    Debounce(u64),
}

impl Idempotency {
    /// registerAgents' item: "<mode F, R or D>|<window ms>|<debounce ms>|<key>".
    pub(crate) fn arg(&self) -> String {
        let (mode, debounce) = match self.mode {
            IdempotencyMode::KeepFirst => ('F', 0),
            IdempotencyMode::Replace => ('R', 0),
            IdempotencyMode::Debounce(ms) => ('D', ms),
        };
        format!("{mode}|{}|{debounce}|{}", self.window_ms, self.key)
    }
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

impl AgentDef {
    /// The stored JSON.
    pub(crate) fn record(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Internal(format!("definition of {}: {e}", self.name)))
    }

    /// The agent named `name` from its stored JSON and payload.
    pub(crate) fn parse(name: String, json: &[u8], payload: Vec<u8>) -> Result<Self> {
        let mut def: AgentDef =
            serde_json::from_slice(json).map_err(|e| Error::Internal(format!("definition of {name}: {e}")))?;
        def.name = name;
        def.payload = payload;
        Ok(def)
    }
}

/// One step a run recorded (RecordStep). A run's record is its steps' entries concatenated, in
/// the order recorded: `"<step>|<recorded at ms>|<result length>|<result>"` each; a step name
/// holds no '|' (it is validated as a name), and the result bytes come last, binary-safe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepRecord {
    pub name: String,
    pub recorded_at_ms: i64,
    pub result: Vec<u8>,
}

impl StepRecord {
    /// A run's record as recordStep writes it (Baton itself never writes one).
    #[cfg(test)]
    pub(crate) fn encode_list(steps: &[StepRecord]) -> Vec<u8> {
        let mut rec = Vec::new();
        for s in steps {
            rec.extend_from_slice(format!("{}|{}|{}|", s.name, s.recorded_at_ms, s.result.len()).as_bytes());
            rec.extend_from_slice(&s.result);
        }
        rec
    }

    /// A run's steps, in order, without its events (`RunEvents`: entries whose name starts
    /// with '?', '!' or '~', which no step name does); None when `rec` is not a steps record.
    pub(crate) fn parse_list(rec: &[u8]) -> Option<Vec<StepRecord>> {
        let mut entries = Self::parse_entries(rec)?;
        entries.retain(|e| !e.name.starts_with(['?', '!', '~']));
        Some(entries)
    }

    /// Every entry of a run's record, steps and events, in order.
    pub(crate) fn parse_entries(rec: &[u8]) -> Option<Vec<StepRecord>> {
        let mut steps = Vec::new();
        let mut rest = rec;
        while !rest.is_empty() {
            let mut field = || -> Option<&[u8]> {
                let bar = rest.iter().position(|&b| b == b'|')?;
                let (head, tail) = (&rest[..bar], &rest[bar + 1..]);
                rest = tail;
                Some(head)
            };
            let name = std::str::from_utf8(field()?).ok()?.to_string();
            let recorded_at_ms = std::str::from_utf8(field()?).ok()?.parse().ok()?;
            let len: usize = std::str::from_utf8(field()?).ok()?.parse().ok()?;
            if rest.len() < len {
                return None;
            }
            steps.push(StepRecord { name, recorded_at_ms, result: rest[..len].to_vec() });
            rest = &rest[len..];
        }
        Some(steps)
    }

    /// The steps kept with a finish (`"<token>|<at>|<record>"`, written by the script that kept
    /// the finish): the finish's token and time (ms), and the steps; None when `rec` is empty or
    /// not such a record.
    pub(crate) fn parse_kept(rec: &[u8]) -> Option<(u64, i64, Vec<StepRecord>)> {
        let mut parts = rec.splitn(3, |&b| b == b'|');
        let token = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        let at_ms = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        Some((token, at_ms, Self::parse_list(parts.next()?)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRedis;

    /// Edge values: no step, an empty result, binary bytes with '|', a time past 2^32.
    fn step_lists() -> Vec<Vec<StepRecord>> {
        let step =
            |name: &str, at, result: &[u8]| StepRecord { name: name.into(), recorded_at_ms: at, result: result.into() };
        vec![
            vec![],
            vec![step("a", 1, b"")],
            vec![step("fetch", 1_795_000_000_123, b"x|y|3|z"), step("s.2_-", 7, &[0, 255, b'|', 10])],
        ]
    }

    #[tokio::test]
    async fn step_records_read_the_same_on_both_sides() {
        let redis = TestRedis::start().await;
        for steps in step_lists() {
            // Lua's encoder writes what Rust's writes, and Rust's parser reads it back.
            let mut lua: Vec<u8> = Vec::new();
            for s in &steps {
                let at = s.recorded_at_ms.to_string();
                let entry: Vec<u8> = redis
                    .eval_includes(
                        &["stepRecord"],
                        "return encodeStep(ARGV[1], tonumber(ARGV[2]), ARGV[3])",
                        &[s.name.as_bytes(), at.as_bytes(), &s.result],
                    )
                    .await;
                lua.extend(entry);
            }
            assert_eq!(lua, StepRecord::encode_list(&steps), "{steps:?}");
            assert_eq!(StepRecord::parse_list(&lua).as_ref(), Some(&steps));
            // Lua's parser reads what Rust's encoder writes.
            let rec = StepRecord::encode_list(&steps);
            let parsed: Vec<Vec<u8>> = redis
                .eval_includes(
                    &["stepRecord"],
                    "local out = {} \
                     for _, s in ipairs(parseSteps(ARGV[1])) do \
                       out[#out + 1] = s.name; out[#out + 1] = string.format('%d', s.at); out[#out + 1] = s.result \
                     end return out",
                    &[&rec],
                )
                .await;
            let expected: Vec<Vec<u8>> = steps
                .iter()
                .flat_map(|s| [s.name.as_bytes().to_vec(), s.recorded_at_ms.to_string().into_bytes(), s.result.clone()])
                .collect();
            assert_eq!(parsed, expected);
            // Kept with a finish: the token in front.
            let mut kept = b"42|1795000000123|".to_vec();
            kept.extend(&rec);
            assert_eq!(StepRecord::parse_kept(&kept), Some((42, 1_795_000_000_123, steps.clone())));
        }
        // Not a steps record: None on both sides.
        for bad in [&b"a|1|5|abc"[..], b"a|x|1|b", b"a|1"] {
            assert_eq!(StepRecord::parse_list(bad), None, "{bad:?}");
            let absent: i64 =
                redis.eval_includes(&["stepRecord"], "return parseSteps(ARGV[1]) and 1 or 0", &[bad]).await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }

    /// The wait record: Lua's encoder writes what Rust parses (an empty event, times past 2^32),
    /// and Lua's parser reads Rust's; anything else is none on both sides.
    #[tokio::test]
    async fn wait_records_match_the_lua_include() {
        let redis = TestRedis::start().await;
        for wait in [
            WaitRecord { event: "approve".into(), until_ms: 0, since_ms: 1 },
            WaitRecord { event: String::new(), until_ms: 1_795_000_000_123, since_ms: 1_795_000_000_000 },
            WaitRecord { event: "a.b_c-9".into(), until_ms: 7, since_ms: 5 },
        ] {
            let (until, since) = (wait.until_ms.to_string(), wait.since_ms.to_string());
            let lua: String = redis
                .eval_includes(
                    &["waitRecord"],
                    "return encodeWait(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))",
                    &[wait.event.as_bytes(), until.as_bytes(), since.as_bytes()],
                )
                .await;
            assert_eq!(lua, wait.encode());
            assert_eq!(WaitRecord::parse(&lua).as_ref(), Some(&wait));
            let parsed: Vec<String> = redis
                .eval_includes(
                    &["waitRecord"],
                    "local w = parseWait(ARGV[1]) \
                     return { w.event, string.format('%d', w.untilMs), string.format('%d', w.since) }",
                    &[wait.encode().as_bytes()],
                )
                .await;
            assert_eq!(parsed, [wait.event.clone(), until, since]);
        }
        for bad in ["", "a|1", "a|x|1", "a|1|2|3"] {
            assert_eq!(WaitRecord::parse(bad), None, "{bad:?}");
            let absent: i64 =
                redis.eval_includes(&["waitRecord"], "return parseWait(ARGV[1]) and 1 or 0", &[bad.as_bytes()]).await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }

    /// A run's events beside its steps: the steps leave them out, the events read the kept
    /// signals and the last delivery (consumed or timed out), as the Lua side writes them.
    #[tokio::test]
    async fn a_run_s_events_ride_beside_its_steps() {
        let redis = TestRedis::start().await;
        let rec: Vec<u8> = redis
            .eval_includes(
                &["stepRecord"],
                "local rec = encodeStep('fetch', 1, 'r') .. encodeStep('?late', 2, 'p|q') .. encodeStep('!go', 3, 'yes') \
                 return encodeSteps(parseSteps(rec .. encodeStep('~old', 4, '')), encodeStep('~wait', 5, ''))",
                &[],
            )
            .await;
        let step = StepRecord { name: "fetch".into(), recorded_at_ms: 1, result: b"r".to_vec() };
        assert_eq!(StepRecord::parse_list(&rec), Some(vec![step]));
        let delivery = Delivery { event: "wait".into(), payload: Vec::new(), at_ms: 5, timed_out: true };
        assert_eq!(RunEvents::parse(&rec), RunEvents { delivery: Some(delivery), pending: 1 });
        let consumed =
            StepRecord::encode_list(&[StepRecord { name: "!go".into(), recorded_at_ms: 3, result: b"yes".to_vec() }]);
        let delivery = Delivery { event: "go".into(), payload: b"yes".to_vec(), at_ms: 3, timed_out: false };
        assert_eq!(RunEvents::parse(&consumed).delivery, Some(delivery));
        let steps_only: i64 = redis
            .eval_includes(
                &["stepRecord"],
                "return (isStep('a.b') and not isStep('?a') and not isStep('!a') and not isStep('~a')) and 1 or 0",
                &[],
            )
            .await;
        assert_eq!(steps_only, 1);
    }

    /// Edge values: a token and times past 2^32, an empty worker, no key, a key holding '@',
    /// a cancel without progress, progress holding '|', a worker of every other byte.
    fn leases() -> Vec<LeaseRecord> {
        let lease = |token, worker: &str, key: Option<&str>, cancel, progress: &str| LeaseRecord {
            token,
            worker: worker.into(),
            acquired_at_ms: 1_795_000_000_123,
            timeout_ms: 3_600_000_000,
            key: key.map(Into::into),
            group: None,
            cancel,
            watch: None,
            progress: progress.into(),
        };
        let watched = |watch, cancel, progress: &str| LeaseRecord {
            watch: Some(watch),
            ..lease(12, "w", None, cancel, progress)
        };
        let grouped = |token, key: Option<&str>, group: &str, cancel, progress: &str| LeaseRecord {
            group: Some(group.into()),
            ..lease(token, "w", key, cancel, progress)
        };
        vec![
            watched(0, false, ""),
            watched(17, true, "w3|x"),
            lease(1, "w1", None, false, ""),
            lease((1 << 53) - 1, "", None, false, ""),
            lease(7, "host:42", Some("tenant-a"), false, ""),
            lease(8, "w", Some("a@b"), true, ""),
            lease(9, "w", None, false, "50%|step 2|of 3"),
            lease(10, "w", Some("k"), true, "|"),
            lease(11, "wörker \t ~", None, false, "half"),
            grouped(12, None, "shared", false, ""),
            grouped(13, Some("tenant-b"), "g.1", true, "x|y"),
        ]
    }

    #[tokio::test]
    async fn lease_records_read_the_same_on_both_sides() {
        let redis = TestRedis::start().await;
        for lease in leases() {
            // Lua's encoder writes what Rust's writes, and Rust's parser reads it back.
            let (token, at, timeout) =
                (lease.token.to_string(), lease.acquired_at_ms.to_string(), lease.timeout_ms.to_string());
            let key = lease.key.clone().unwrap_or_default();
            let flags = format!(
                "{}{}",
                if lease.cancel { "c" } else { "" },
                lease.watch.map(|n| format!("w{n}")).unwrap_or_default()
            );
            let flags = flags.as_str();
            let tail = if !flags.is_empty() || !lease.progress.is_empty() { "1" } else { "0" };
            let group = lease.group.clone().unwrap_or_default();
            let args: [&[u8]; 9] = [
                token.as_bytes(),
                lease.worker.as_bytes(),
                at.as_bytes(),
                timeout.as_bytes(),
                key.as_bytes(),
                flags.as_bytes(),
                lease.progress.as_bytes(),
                tail.as_bytes(),
                group.as_bytes(),
            ];
            let lua: String = redis
                .eval_includes(
                    &["leaseRecord"],
                    "if ARGV[8] == '1' then \
                       return encodeLease(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[9]) end \
                     return encodeLease(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], nil, nil, ARGV[9])",
                    &args,
                )
                .await;
            assert_eq!(lua, lease.encode(), "{lease:?}");
            assert_eq!(LeaseRecord::parse(&lua).as_ref(), Some(&lease), "{lua:?}");
            // Lua's parser reads what Rust's encoder writes, and rewrites it keeping its head.
            let rec = lease.encode();
            let parsed: Vec<String> = redis
                .eval_includes(
                    &["leaseRecord"],
                    "local l = parseLease(ARGV[1]) \
                     return { l.token, l.worker, string.format('%d', l.acquiredAt), string.format('%d', l.timeout), \
                              l.key or '-', leaseFlags(l.cancel, l.watch), l.progress, leaseToken(ARGV[1]), \
                              leaseKey(ARGV[1]) or '-', rewriteLease(l, leaseFlags(l.cancel, l.watch), l.progress), \
                              l.group or '-', leaseGroup(ARGV[1]) or '-' }",
                    &[rec.as_bytes()],
                )
                .await;
            let key = lease.key.clone().unwrap_or_else(|| "-".into());
            let expected = [
                token.as_str(),
                lease.worker.as_str(),
                at.as_str(),
                timeout.as_str(),
                key.as_str(),
                flags,
                lease.progress.as_str(),
                token.as_str(),
                key.as_str(),
            ];
            assert_eq!(parsed[..9], expected, "{rec:?}");
            // A rewrite always carries the tail; it reads as the same lease.
            assert_eq!(LeaseRecord::parse(&parsed[9]).as_ref(), Some(&lease), "{:?}", parsed[9]);
            let group = lease.group.clone().unwrap_or_else(|| "-".into());
            assert_eq!(parsed[10..], [group.as_str(), group.as_str()], "{rec:?}");
        }
        // A cascade's mark ("k", written by releaseChild's rewriteLease) reads as a cancel on
        // both sides, and only Lua's parser tells it from CancelRun's.
        let marked = "12|w|1795000000123|3600000000|k|half";
        assert!(LeaseRecord::parse(marked).is_some_and(|l| l.cancel && l.progress == "half"));
        let lua: Vec<i64> = redis
            .eval_includes(
                &["leaseRecord"],
                "local l = parseLease(ARGV[1]) return { l.cancel and 1 or 0, l.cascade and 1 or 0, \
                   parseLease(rewriteLease(l, 'k', l.progress)).cascade and 1 or 0, \
                   parseLease(rewriteLease(l, 'c', l.progress)).cascade and 1 or 0 }",
                &[marked.as_bytes()],
            )
            .await;
        assert_eq!(lua, [1, 1, 1, 0]);
        // A watched lease a cascade marked keeps both marks through a watched update's rewrite
        // (recordStep, watchAgent): still a cascade, still watched, numbered on.
        let both = "12|w|1795000000123|3600000000|kw3|half";
        assert!(LeaseRecord::parse(both).is_some_and(|l| l.cancel && l.watch == Some(3)));
        let lua: Vec<String> = redis
            .eval_includes(
                &["leaseRecord"],
                "local l = parseLease(ARGV[1]) \
                 local r = parseLease(rewriteLease(l, leaseFlags(l.cancel, l.watch + 1, l.cascade), l.progress)) \
                 return { tostring(r.cancel), tostring(r.cascade), tostring(r.watch), r.progress }",
                &[both.as_bytes()],
            )
            .await;
        assert_eq!(lua, ["true", "true", "4", "half"]);
        // Not a lease record: None on both sides.
        for bad in ["", "x|w|1|2", "1|w|x|2"] {
            assert_eq!(LeaseRecord::parse(bad), None, "{bad:?}");
            let absent: i64 =
                redis.eval_includes(&["leaseRecord"], "return parseLease(ARGV[1]) and 1 or 0", &[bad.as_bytes()]).await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }

    /// Definitions as Baton writes them: every zero field left out, labels that look like fields,
    /// the largest values.
    fn definitions() -> Vec<AgentDef> {
        let mut labels = BTreeMap::new();
        labels.insert("timeout_ms".to_string(), "\"timeout_ms\":7".to_string());
        labels.insert("interval_ms".to_string(), "9".to_string());
        // "parents" comes after the labels: a label of that name is met first.
        labels.insert("parents".to_string(), "4".to_string());
        // A label cannot fake an expiry, by its name or by its value.
        labels.insert("expire_at_ms".to_string(), ",\"expire_at_ms\":5".to_string());
        vec![
            AgentDef { timeout_ms: 30_000, error_interval_ms: 1_000, ..Default::default() },
            AgentDef { timeout_ms: 30_000, expire_at_ms: (1 << 53) - 1, ..Default::default() },
            AgentDef {
                key: "tenant|a".into(),
                priority: -1000,
                interval_ms: u64::from(u32::MAX) * 1000,
                timeout_ms: 1,
                error_interval_ms: 0,
                max_attempts: u32::MAX,
                labels,
                cron: "*/5 * * * *".into(),
                parent_traceparents: [("q|p".to_string(), "00-ab-cd-01".to_string())].into(),
                ..Default::default()
            },
        ]
    }

    #[tokio::test]
    async fn definitions_read_the_same_on_both_sides() {
        let redis = TestRedis::start().await;
        for def in definitions() {
            let json = def.record().unwrap();
            // Lua reads each whole-number field as Rust wrote it; an absent one as 0.
            let fields = ["timeout_ms", "error_interval_ms", "interval_ms", "max_attempts", "priority", "parents"];
            let read: Vec<String> = redis
                .eval_includes(
                    &["defField"],
                    "local out = {} \
                     for i = 2, #ARGV do out[#out + 1] = string.format('%d', defField(ARGV[1], ARGV[i])) end \
                     return out",
                    &[&[json.as_bytes()][..], &fields.map(str::as_bytes)[..]].concat(),
                )
                .await;
            let expected = [
                def.timeout_ms.to_string(),
                def.error_interval_ms.to_string(),
                def.interval_ms.to_string(),
                def.max_attempts.to_string(),
                // defField reads whole numbers; a negative priority is read by keyedOrder.
                def.priority.max(0).to_string(),
                def.parents.to_string(),
            ];
            assert_eq!(read, expected, "{json}");
            // What registerAgents writes back (parents appended, links dropped or kept) reads in
            // Rust as the definition with those changes.
            let rewritten: Vec<String> = redis
                .eval_includes(
                    &["defField"],
                    "return { defWithParents(ARGV[1], 3), defWithoutLinks(ARGV[1]), \
                              defKeepParents(ARGV[1], defWithParents(ARGV[1], 2), 4) }",
                    &[json.as_bytes()],
                )
                .await;
            // The count registerAgents appends is read past a label of the same name.
            let appended: i64 = redis
                .eval_includes(
                    &["defField"],
                    "return defField(defWithParents(ARGV[1], 3), 'parents')",
                    &[json.as_bytes()],
                )
                .await;
            assert_eq!(appended, 3, "{json}");
            let parse = |json: &str| AgentDef::parse(String::new(), json.as_bytes(), Vec::new()).unwrap();
            assert_eq!(parse(&rewritten[0]), AgentDef { parents: 3, ..def.clone() }, "{}", rewritten[0]);
            assert_eq!(
                parse(&rewritten[1]),
                AgentDef { parent_traceparents: BTreeMap::new(), ..def.clone() },
                "{}",
                rewritten[1]
            );
            assert_eq!(parse(&rewritten[2]), AgentDef { parents: 4, ..def.clone() }, "{}", rewritten[2]);
            assert_eq!(parse(&json), def);
            // The expiry as the acquire scripts read it (-1: none), and the definition a first
            // run's grant writes back, without it.
            let (at, without): (i64, String) = redis
                .eval_includes(
                    &["defField"],
                    "return { defExpireAt(ARGV[1]) or -1, defWithoutExpiry(ARGV[1]) }",
                    &[json.as_bytes()],
                )
                .await;
            assert_eq!(at, if def.expire_at_ms > 0 { def.expire_at_ms } else { -1 }, "{json}");
            assert_eq!(parse(&without), AgentDef { expire_at_ms: 0, ..def.clone() }, "{without}");
        }
    }
}
