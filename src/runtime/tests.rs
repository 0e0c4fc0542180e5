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
