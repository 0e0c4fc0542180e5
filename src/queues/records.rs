//! The records of a queue stored in Redis, each with its encoder and parser side by side; their
//! Lua side is one include per record, tested against this one (`tests` below).
//!
//! - The lease record (`lua/includes/leaseRecord.lua`): written by the scripts only, read here
//!   by ListAgents.

/// A lease record, "token|worker|acquired_at|timeout_ms[@key][|flags|progress]": flags "c" when
/// CancelRun marked the run; progress, as the holder last reported it, comes last and may hold
/// '|'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    pub token: u64,
    pub worker: String,
    pub acquired_at_ms: i64,
    pub timeout_ms: u64,
    /// The key of a keyed agent's lease; None for a plain lease.
    pub key: Option<String>,
    pub cancel: bool,
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
        if self.cancel || !self.progress.is_empty() {
            rec.push('|');
            rec.push_str(if self.cancel { "c" } else { "" });
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
        let fourth = fields.next()?;
        let (timeout, key) = match fourth.split_once('@') {
            Some((t, k)) => (t, Some(k.to_string())),
            None => (fourth, None),
        };
        let timeout_ms = timeout.parse().ok()?;
        let flags = fields.next().unwrap_or("");
        let progress = fields.next().unwrap_or("").to_string();
        Some(Self { token, worker, acquired_at_ms, timeout_ms, key, cancel: flags == "c", progress })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRedis;

    /// Edge values: a token and times past 2^32, an empty worker, no key, a key holding '@',
    /// a cancel without progress, progress holding '|', a worker of every other byte.
    fn leases() -> Vec<LeaseRecord> {
        let lease = |token, worker: &str, key: Option<&str>, cancel, progress: &str| LeaseRecord {
            token,
            worker: worker.into(),
            acquired_at_ms: 1_795_000_000_123,
            timeout_ms: 3_600_000_000,
            key: key.map(Into::into),
            cancel,
            progress: progress.into(),
        };
        vec![
            lease(1, "w1", None, false, ""),
            lease((1 << 53) - 1, "", None, false, ""),
            lease(7, "host:42", Some("tenant-a"), false, ""),
            lease(8, "w", Some("a@b"), true, ""),
            lease(9, "w", None, false, "50%|step 2|of 3"),
            lease(10, "w", Some("k"), true, "|"),
            lease(11, "wörker \t ~", None, false, "half"),
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
            let flags = if lease.cancel { "c" } else { "" };
            let tail = if lease.cancel || !lease.progress.is_empty() { "1" } else { "0" };
            let args: [&[u8]; 8] = [
                token.as_bytes(),
                lease.worker.as_bytes(),
                at.as_bytes(),
                timeout.as_bytes(),
                key.as_bytes(),
                flags.as_bytes(),
                lease.progress.as_bytes(),
                tail.as_bytes(),
            ];
            let lua: String = redis
                .eval_includes(
                    &["leaseRecord"],
                    "if ARGV[8] == '1' then \
                       return encodeLease(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]) end \
                     return encodeLease(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])",
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
                              l.key or '-', l.cancel and 'c' or '', l.progress, leaseToken(ARGV[1]), \
                              leaseKey(ARGV[1]) or '-', rewriteLease(l, l.cancel and 'c' or '', l.progress) }",
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
        }
        // Not a lease record: None on both sides.
        for bad in ["", "x|w|1|2", "1|w|x|2"] {
            assert_eq!(LeaseRecord::parse(bad), None, "{bad:?}");
            let absent: i64 =
                redis.eval_includes(&["leaseRecord"], "return parseLease(ARGV[1]) and 1 or 0", &[bad.as_bytes()]).await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }
}
