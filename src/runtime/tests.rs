//! The runtime's own tests against a real redis-server (`crate::testing`).

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::runtime::leadership::Leadership;
use crate::store::wake::Wakeups;
use crate::testing::TestRedis;

/// Keeps Redis busy for `ms` with one script on its own connection: Redis runs one script at a
/// time, so every other command waits in line. Await the handle to know it is over.
async fn hold_busy(redis: &TestRedis, ms: u64) -> tokio::task::JoinHandle<()> {
    let mut busy = redis.conn().await;
    let script = format!(
        "local s = redis.call('TIME') repeat local n = redis.call('TIME') \
         until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > {} return 1",
        ms * 1000
    );
    let hold = tokio::spawn(async move {
        let _: i64 = redis::cmd("EVAL").arg(script).arg(0).query_async(&mut busy).await.unwrap();
    });
    // Let the script start before anything else is sent.
    tokio::time::sleep(Duration::from_millis(50)).await;
    hold
}

// A replica's leadership of a background duty never outlives what it can prove: when Redis
// stops answering its renewals, it steps down before any renewal it sent could have expired
// (2/3 ttl after the last successful one was sent), not a ttl after the last answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_steps_down_before_its_term_can_expire() {
    let redis = TestRedis::start().await;
    let stores = redis.stores().await;
    let stop = CancellationToken::new();
    let ttl = Duration::from_millis(3_000);
    let wakeups = Wakeups::spawn(&stores.core, stop.clone());
    let (mut leadership, task) =
        Leadership::spawn(stores.elections, wakeups, "lead".into(), "me".into(), ttl, stop.clone());
    tokio::time::timeout(Duration::from_secs(30), async {
        while !leadership.is_leader() {
            leadership.changed().await;
        }
    })
    .await
    .expect("elected");
    // From here no renewal can succeed: Redis runs one long script and answers nothing else.
    let busy = hold_busy(&redis, 2 * ttl.as_millis() as u64).await;
    let stalled = Instant::now();
    tokio::time::timeout(Duration::from_secs(30), async {
        while leadership.is_leader() {
            leadership.changed().await;
        }
    })
    .await
    .expect("steps down");
    // Every renewal that succeeded was sent before the stall, so its term ends by stalled + ttl.
    assert!(
        stalled.elapsed() < ttl,
        "stepped down {:?} into the stall; the term could end at {ttl:?}",
        stalled.elapsed()
    );
    busy.await.unwrap();
    stop.cancel();
    task.await.unwrap();
}

/// ZSCAN commands Redis has run (inside scripts too), from INFO commandstats.
async fn zscans(conn: &mut redis::aio::MultiplexedConnection) -> usize {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_zscan:calls="))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

// The repair of numeric-only names reads a bounded slice of a queue per pass, whatever its size,
// and goes on where it stopped, so a corrupt name anywhere in it is still found.
#[tokio::test]
async fn a_repair_pass_reads_a_bounded_slice_of_a_large_queue() {
    use crate::runtime::names::{NameRepair, PAGE, PAGES};
    let redis = TestRedis::start().await;
    let stores = redis.stores().await;
    let mut conn = redis.conn().await;
    let (waiting, defs) = ("baton:{q:big}:waiting", "baton:{q:big}:defs");
    // Three passes' worth of entries (the repair reads names only), and one corrupt name.
    let n = 3 * PAGES * PAGE as usize;
    for chunk in (0..n).collect::<Vec<_>>().chunks(1_000) {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(waiting);
        for i in chunk {
            zadd.arg(*i as u64).arg(format!("agent-{i}"));
        }
        let _: () = zadd.query_async(&mut conn).await.unwrap();
    }
    let _: () = redis::cmd("ZADD").arg(waiting).arg(1).arg("12345").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("HSET").arg(defs).arg("12345").arg("{}").query_async(&mut conn).await.unwrap();
    let repair = NameRepair::default();
    let mut passes = 0;
    loop {
        let before = zscans(&mut conn).await;
        let repaired = repair.step(&stores.queues, "big", None).await.unwrap();
        let read = zscans(&mut conn).await - before;
        passes += 1;
        assert!(read <= PAGES, "pass {passes} made {read} script calls, more than {PAGES}");
        if repaired == 1 {
            break;
        }
        assert!(passes < 6, "the corrupt name was not found in {passes} passes over {n} entries");
    }
    let left: bool = redis::cmd("HEXISTS").arg(defs).arg("12345").query_async(&mut conn).await.unwrap();
    assert!(!left);
    let count: usize = redis::cmd("ZCARD").arg(waiting).query_async(&mut conn).await.unwrap();
    assert_eq!(count, n, "only the corrupt name was removed");
}
