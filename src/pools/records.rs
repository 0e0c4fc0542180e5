//! The records of a pool stored in Redis. The claim record ("token|claimer|claimed_at|attributes
//! JSON", `lua/includes/claimRecord.lua`) is written and read by the scripts only: Baton answers
//! a claim from the script's reply. Its encoder and parser are tested against each other here.

#[cfg(test)]
mod tests {
    use crate::testing::TestRedis;

    #[tokio::test]
    async fn claim_records_read_back_as_written() {
        let redis = TestRedis::start().await;
        let cases: [[&str; 4]; 4] = [
            ["1", "replica-a", "1795000000123", "{}"],
            ["9007199254740991", "", "0", ""],
            ["7", "c ü", "5", r#"{"zone":"a|b","note":"x|"}"#],
            ["8", "c", "6", "|"],
        ];
        for case in cases {
            let args = case.map(str::as_bytes);
            let read: Vec<String> = redis
                .eval_includes(
                    &["claimRecord"],
                    "local rec = encodeClaim(ARGV[1], ARGV[2], ARGV[3], ARGV[4]) \
                     local c = claimRecord(rec) \
                     return { rec, c.token, c.claimer, string.format('%d', c.at), c.attrs }",
                    &args,
                )
                .await;
            assert_eq!(read[0], case.join("|"), "{case:?}");
            assert_eq!(read[1..], case, "{case:?}");
        }
        for bad in ["", "x|c|1|{}", "1|c|{}"] {
            let absent: i64 = redis
                .eval_includes(&["claimRecord"], "return claimRecord(ARGV[1]) and 1 or 0", &[bad.as_bytes()])
                .await;
            assert_eq!(absent, 0, "{bad:?}");
        }
    }
}
