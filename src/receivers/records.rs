//! The records of a receiver stored in Redis, each with its encoder and parser side by side; their
//! Lua side is one include per record, tested against this one (`tests` below).
//!
//! - A message's metadata (`lua/includes/messageMeta.lua`): written by the scripts, read here by
//!   ListMessages.

/// A message's metadata, "deliver_at|delivery_count|key[|traceparent]": key "" for none; the
/// traceparent, last, is left out when there is none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MessageMeta {
    pub deliver_at_ms: i64,
    pub delivery_count: u32,
    pub key: String,
    pub traceparent: String,
}

impl MessageMeta {
    /// The record as the scripts write it (Baton itself never writes one).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> String {
        let mut rec = format!("{}|{}|{}", self.deliver_at_ms, self.delivery_count, self.key);
        if !self.traceparent.is_empty() {
            rec.push('|');
            rec.push_str(&self.traceparent);
        }
        rec
    }

    /// The record's fields, or None when it is not a metadata record.
    pub(crate) fn parse(rec: &str) -> Option<Self> {
        let mut f = rec.splitn(4, '|');
        let deliver_at_ms = f.next()?.parse().ok()?;
        let delivery_count = f.next()?.parse().ok()?;
        let key = f.next()?.to_string();
        let traceparent = f.next().unwrap_or_default().to_string();
        Some(Self { deliver_at_ms, delivery_count, key, traceparent })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRedis;

    #[tokio::test]
    async fn message_meta_reads_the_same_on_both_sides() {
        let redis = TestRedis::start().await;
        let meta = |at, count, key: &str, tp: &str| MessageMeta {
            deliver_at_ms: at,
            delivery_count: count,
            key: key.into(),
            traceparent: tp.into(),
        };
        let cases = [
            meta(0, 0, "", ""),
            meta(1_795_000_000_123, u32::MAX, "order-42", ""),
            meta(5, 3, "", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            meta((1 << 53) - 1, 1, "k ü", "tp|with|bars"),
        ];
        for m in cases {
            // Lua's encoder writes what Rust's writes; Rust's parser reads it back.
            let (at, count) = (m.deliver_at_ms.to_string(), m.delivery_count.to_string());
            let args: [&[u8]; 4] = [at.as_bytes(), count.as_bytes(), m.key.as_bytes(), m.traceparent.as_bytes()];
            let lua: String = redis
                .eval_includes(&["messageMeta"], "return encodeMeta(ARGV[1], ARGV[2], ARGV[3], ARGV[4])", &args)
                .await;
            assert_eq!(lua, m.encode(), "{m:?}");
            assert_eq!(MessageMeta::parse(&lua).as_ref(), Some(&m));
            // Lua's parser reads what Rust's encoder writes.
            let parsed: Vec<String> = redis
                .eval_includes(
                    &["messageMeta"],
                    "local m = messageMeta(ARGV[1]) \
                     return { string.format('%d', m.at), string.format('%d', m.count), m.key, m.traceparent }",
                    &[m.encode().as_bytes()],
                )
                .await;
            assert_eq!(parsed, args.map(|a| String::from_utf8(a.to_vec()).unwrap()), "{m:?}");
        }
        for bad in ["", "x|0|k", "1|y|k"] {
            assert_eq!(MessageMeta::parse(bad), None, "{bad:?}");
            let absent: i64 = redis
                .eval_includes(&["messageMeta"], "return messageMeta(ARGV[1]) and 1 or 0", &[bad.as_bytes()])
                .await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }
}
