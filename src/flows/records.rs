//! The records of flows stored in Redis, each with its encoder and parser side by side; their
//! Lua side is tested against this one (`tests` below).
//!
//! - The result record of a finish (`resultRecord` and `parseResultRecord` in
//!   `lua/includes/finished.lua`): written by the scripts (and here, for a parent gone without
//!   one), read here by Await, Acquire (a lease's parents) and deduplicated registrations.

/// How an agent finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    Succeeded,
    DeadLettered,
    Cancelled,
    Unregistered,
    /// Its expiry passed before any run started (`Agent.expire_at`, `ttl`).
    Expired,
}

impl Finish {
    fn letter(self) -> char {
        match self {
            Finish::Succeeded => 'S',
            Finish::DeadLettered => 'D',
            Finish::Cancelled => 'C',
            Finish::Unregistered => 'U',
            Finish::Expired => 'X',
        }
    }
}

/// An agent's finish as kept, its result record:
/// "<finish>|<outcome>|<token>|<at ms>|<message length>|<message><result>", finish S, D, C, U or X,
/// or c, u for a cancel or an unregistration that cascades (its children are cancelled whatever
/// their policy); the message is counted in bytes, and the result bytes come last, binary-safe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishRecord {
    pub finish: Finish,
    /// The outcome of the run that finished it ("SUCCESS", …); "" when no run did.
    pub outcome: String,
    pub token: u64,
    pub at_ms: i64,
    pub message: String,
    pub result: Vec<u8>,
    /// The finish cascades to the agent's descendants (CancelRun or Unregister with cascade,
    /// and every descendant such a cascade cancelled): letter c or u.
    pub cascade: bool,
}

impl FinishRecord {
    /// The record's finish letter: lower case for a cascade.
    fn letter(&self) -> char {
        let letter = self.finish.letter();
        if self.cascade {
            letter.to_ascii_lowercase()
        } else {
            letter
        }
    }

    /// The record, as the scripts' `resultRecord` writes it.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut rec = format!(
            "{}|{}|{}|{}|{}|{}",
            self.letter(),
            self.outcome,
            self.token,
            self.at_ms,
            self.message.len(),
            self.message
        )
        .into_bytes();
        rec.extend_from_slice(&self.result);
        rec
    }

    /// The record's fields, or None when it is not a result record.
    pub fn parse(raw: &[u8]) -> Option<Self> {
        let mut rest = raw;
        let mut field = || {
            let i = rest.iter().position(|&b| b == b'|')?;
            let f = &rest[..i];
            rest = &rest[i + 1..];
            Some(f)
        };
        let (finish, cascade) = match field()? {
            b"S" => (Finish::Succeeded, false),
            b"D" => (Finish::DeadLettered, false),
            b"C" => (Finish::Cancelled, false),
            b"U" => (Finish::Unregistered, false),
            b"X" => (Finish::Expired, false),
            b"c" => (Finish::Cancelled, true),
            b"u" => (Finish::Unregistered, true),
            _ => return None,
        };
        let outcome = String::from_utf8(field()?.to_vec()).ok()?;
        let token = std::str::from_utf8(field()?).ok()?.parse().ok()?;
        let at_ms = std::str::from_utf8(field()?).ok()?.parse().ok()?;
        let len: usize = std::str::from_utf8(field()?).ok()?.parse().ok()?;
        if rest.len() < len {
            return None;
        }
        let message = String::from_utf8_lossy(&rest[..len]).into_owned();
        Some(Self { finish, outcome, token, at_ms, message, result: rest[len..].to_vec(), cascade })
    }

    /// The record of a parent that is gone without a finish kept (treated as unregistered).
    pub(crate) fn missing() -> Vec<u8> {
        Self {
            finish: Finish::Unregistered,
            outcome: String::new(),
            token: 0,
            at_ms: 0,
            message: String::new(),
            result: Vec::new(),
            cascade: false,
        }
        .encode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRedis;

    /// Edge values: empty fields, a token and time past 2^32, '|' in the message and in the
    /// result, a multi-byte message, binary result bytes (NUL, invalid UTF-8), a large result.
    fn records() -> Vec<FinishRecord> {
        let record = |finish, outcome: &str, token, message: &str, result: &[u8]| FinishRecord {
            finish,
            outcome: outcome.into(),
            token,
            at_ms: 1_795_000_000_123,
            message: message.into(),
            result: result.to_vec(),
            cascade: false,
        };
        let cascade = |finish, message: &str| FinishRecord { cascade: true, ..record(finish, "", 0, message, b"") };
        let mut big = vec![b'|'; 70_000];
        big.extend_from_slice(&[0, 255, 254]);
        vec![
            record(Finish::Succeeded, "SUCCESS", 1, "", b""),
            record(Finish::Succeeded, "SUCCESS", (1 << 53) - 1, "", &[0, b'|', 0xff, 0xfe, b'\n']),
            record(Finish::DeadLettered, "FAILURE", 42, "boom | 3 of 3 | ünïcode", b"partial|result"),
            record(Finish::Cancelled, "", 0, "parent q|p failed", b""),
            record(Finish::Unregistered, "", 0, "", b""),
            record(Finish::Expired, "", 0, "expired before any run started", b""),
            record(Finish::Succeeded, "SUCCESS", 5, "12|", &big),
            cascade(Finish::Cancelled, "cancelled: ancestor q/root"),
            cascade(Finish::Unregistered, ""),
        ]
    }

    #[tokio::test]
    async fn result_records_read_the_same_on_both_sides() {
        let redis = TestRedis::start().await;
        let letters = |r: &FinishRecord| r.letter().to_string();
        for record in records() {
            // Lua's resultRecord writes what Rust's encoder writes; Rust's parser reads it back.
            let (finish, token, at) = (letters(&record), record.token.to_string(), record.at_ms.to_string());
            let lua: Vec<u8> = redis
                .eval_includes(
                    &["finished"],
                    "return resultRecord(ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6])",
                    &[
                        finish.as_bytes(),
                        record.outcome.as_bytes(),
                        token.as_bytes(),
                        at.as_bytes(),
                        record.message.as_bytes(),
                        &record.result,
                    ],
                )
                .await;
            assert_eq!(lua, record.encode(), "{record:?}");
            assert_eq!(FinishRecord::parse(&lua).as_ref(), Some(&record));
            // Lua's parser reads what Rust's encoder writes.
            let parsed: Vec<Vec<u8>> = redis
                .eval_includes(
                    &["finished"],
                    "local r = parseResultRecord(ARGV[1]) \
                     return { r.finish, r.outcome, string.format('%d', r.token), string.format('%d', r.at), r.message, \
                              r.result, resultFinish(ARGV[1]) }",
                    &[&record.encode()],
                )
                .await;
            let expected: [&[u8]; 7] = [
                finish.as_bytes(),
                record.outcome.as_bytes(),
                token.as_bytes(),
                at.as_bytes(),
                record.message.as_bytes(),
                &record.result,
                finish.as_bytes(),
            ];
            assert_eq!(parsed, expected, "{record:?}");
        }
        // What Baton writes for a parent gone without a record reads as an unregistration.
        let missing: String = redis
            .eval_includes(&["finished"], "return parseResultRecord(ARGV[1]).finish", &[&FinishRecord::missing()])
            .await;
        assert_eq!(missing, "U");
        // Not a result record, or one cut short: None on both sides.
        for bad in [&b""[..], b"Z||0|0|0|", b"S|SUCCESS|1|2|5|abc"] {
            assert_eq!(FinishRecord::parse(bad), None, "{bad:?}");
            let absent: i64 =
                redis.eval_includes(&["finished"], "return parseResultRecord(ARGV[1]) and 1 or 0", &[bad]).await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }
}
