//! Flow control end to end (AdminService.SetLimits, Pause, Resume), against real Redis and two
//! Baton replicas.
//!
//! Invariants checked:
//! - a queue's concurrency limit is never exceeded across the fleet: a worker counts a lease
//!   from when Acquire returns it until before it calls Complete, an interval inside the
//!   server's, so the workers' count can only pass the limit if the server's did;
//! - grants stay within the token bucket: over any span of the recorded grant times (Redis
//!   clock), grants ≤ burst + rate × span;
//! - a THROTTLED completion with retry_after holds the whole queue's bucket that long;
//! - every way a lease ends (Complete, Release, the sweepers' reap, the purge) wakes a long poll
//!   the concurrency limit held back, at once (its own wait is 60 s, the test allows 10 s);
//! - a paused queue or receiver hands out nothing while long polls and streams keep waiting;
//!   Resume releases them;
//! - bad input is INVALID_ARGUMENT naming the field and changes nothing; a sharded queue's
//!   limits and a pool's pause are FAILED_PRECONDITION (UNSUPPORTED).

use crate::common;

use std::{
    sync::{
        atomic::{AtomicI64, AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::pb::{
    admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient,
    schedule_service_client::ScheduleServiceClient,
};
use common::*;
use tokio_stream::StreamExt;
use tonic::{transport::Channel, Code};

const Q: &str = "limited";

async fn admin(baton: &TestBaton) -> AdminServiceClient<Channel> {
    AdminServiceClient::new(baton.channel().await)
}

fn limits(concurrency: u32, rate: Option<(f64, u32)>) -> Option<pb::QueueLimits> {
    Some(pb::QueueLimits {
        concurrency,
        rate: rate.map(|(per_second, burst)| pb::RateLimit { per_second, burst }),
        ..Default::default()
    })
}

async fn set_limits(
    a: &mut AdminServiceClient<Channel>,
    queue: &str,
    l: Option<pb::QueueLimits>,
) -> pb::SetLimitsResponse {
    a.set_limits(pb::SetLimitsRequest { queue: queue.into(), limits: l, create: false })
        .await
        .expect("set limits")
        .into_inner()
}

fn source(kind: pb::SourceKind, name: &str) -> Option<pb::Source> {
    Some(pb::Source { kind: kind as i32, name: name.into() })
}

async fn health_of(a: &mut AdminServiceClient<Channel>, kind: pb::SourceKind, name: &str) -> Option<pb::SourceHealth> {
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    h.sources.into_iter().find(|s| s.source.as_ref().is_some_and(|s| s.kind == kind as i32 && s.name == name))
}

fn long_poll(queue: &str, worker: &str, max: u32, wait_ms: u64) -> pb::AcquireRequest {
    pb::AcquireRequest { queue: queue.into(), worker_id: worker.into(), max_leases: max, wait: dur(wait_ms) }
}

// 16 workers on two replicas, each taking up to 3 leases per long poll, over 300 one-shot
// agents under a limit of 5: the workers never hold more than 5 at once, and all 300 run
// (lease ends wake the waiting long polls; without the wake-up each would wait its full 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_concurrency_limit_is_never_exceeded_across_replicas() {
    const AGENTS: usize = 300;
    const LIMIT: i64 = 5;
    let mut env = Env::start().await;
    let second = TestBaton::start(&env.redis.url(), test_config()).await;
    let mut a = admin(&env.baton).await;
    let defs: Vec<_> = (0..AGENTS).map(|i| agent(&format!("job-{i:03}"), 0, 60_000)).collect();
    register(&mut env.client, Q, defs).await;
    let stored = set_limits(&mut a, Q, limits(LIMIT as u32, None)).await;
    assert_eq!(stored.limits.unwrap().concurrency, LIMIT as u32);

    let held = Arc::new(AtomicI64::new(0));
    let most = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let clients = [env.client.clone(), second.agents().await];
    let mut tasks = Vec::new();
    for w in 0..16 {
        let mut c = clients[w % 2].clone();
        let (held, most, done) = (held.clone(), most.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while done.load(Ordering::SeqCst) < AGENTS as u64 {
                let leases = c.acquire(long_poll(Q, &format!("w{w}"), 3, 10_000)).await.unwrap().into_inner().leases;
                let now = held.fetch_add(leases.len() as i64, Ordering::SeqCst) + leases.len() as i64;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                for l in leases {
                    held.fetch_sub(1, Ordering::SeqCst);
                    c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(120), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("every agent ran within 120 s");
    assert_eq!(done.load(Ordering::SeqCst), AGENTS as u64);
    let most = most.load(Ordering::SeqCst);
    assert!(most <= LIMIT, "workers held {most} leases at once under a limit of {LIMIT}");
    assert!(most >= 1);
    let h = health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap();
    assert_eq!(h.limits.unwrap().concurrency, LIMIT as u32);
    second.stop().await.unwrap();
}

// A rate of 20/s with a burst of 5, 8 workers on two replicas cycling 50 recurring agents for
// 10 s of Redis time: over every span between two grants, grants ≤ 5 + 20 × span.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grants_stay_within_the_token_bucket() {
    const RATE: f64 = 20.0;
    const BURST: u32 = 5;
    const TIMEOUT_MS: i64 = 60_000;
    let mut env = Env::start().await;
    let second = TestBaton::start(&env.redis.url(), test_config()).await;
    let mut a = admin(&env.baton).await;
    // Nothing polls until the limit is set.
    let defs: Vec<_> = (0..50).map(|i| agent(&format!("poll-{i:02}"), 1, TIMEOUT_MS as u64)).collect();
    register(&mut env.client, Q, defs).await;
    set_limits(&mut a, Q, limits(0, Some((RATE, BURST)))).await;

    let start = env.redis.now_ms().await;
    let end = start + 10_000;
    let clients = [env.client.clone(), second.agents().await];
    let grants = cycle_until(&clients, Q, 8, TIMEOUT_MS, end).await;
    let times: Vec<i64> = grants.iter().map(|(_, at)| *at).filter(|at| *at < end).collect();
    assert_within_bucket("the queue", &times, RATE, BURST);
    // Progress: the bucket, not the workers, was the limit (≥ a quarter of what it allows).
    let allowed = BURST as f64 + RATE * 10.0;
    assert!(times.len() as f64 >= allowed / 4.0, "only {} grants in 10 s (bucket allows {allowed})", times.len());
    let h = health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap();
    let rate = h.limits.unwrap().rate.unwrap();
    assert_eq!((rate.per_second, rate.burst), (RATE, BURST));
    assert!(h.rate_tokens >= 0.0 && h.rate_tokens <= BURST as f64);
    second.stop().await.unwrap();
}

/// A queue at a concurrency limit of 1 holding due work back: `first` is leased, and a long
/// poll for one lease (wait 60 s, far beyond what the tests allow it) waits for `second`.
/// Returns once that poll's Acquire has found the queue blocked ("blocked" in its limits): from
/// then on only a wake-up can hand it `second` before its wait ends, since a queue held back by
/// its concurrency limit sets no timer and nothing else announces the queue. `Env` runs no
/// sweeper and no purge, so each test decides how the lease ends.
async fn held_back_waiter(env: &mut Env, first: pb::Agent) -> (pb::Lease, tokio::task::JoinHandle<Vec<pb::Lease>>) {
    let mut a = admin(&env.baton).await;
    register(&mut env.client, Q, vec![first]).await;
    set_limits(&mut a, Q, limits(1, None)).await;
    let lease = acquire(&mut env.client, Q, "holder", 1).await.pop().expect("due");
    register(&mut env.client, Q, vec![agent("second", 0, 60_000)]).await;
    let mut c = env.client.clone();
    let waiter =
        tokio::spawn(async move { c.acquire(long_poll(Q, "waiter", 1, 60_000)).await.unwrap().into_inner().leases });
    let conn = env.redis.conn().await;
    eventually(Duration::from_secs(20), "the long poll found the queue held back", || {
        let mut conn = conn.clone();
        async move {
            let blocked: Option<String> = redis::cmd("HGET")
                .arg(format!("baton:{{q:{Q}}}:limits"))
                .arg("blocked")
                .query_async(&mut conn)
                .await
                .unwrap();
            blocked.is_some()
        }
    })
    .await;
    assert!(!waiter.is_finished(), "the long poll waits");
    (lease, waiter)
}

/// The waiter gets `second` well within its 60 s wait: woken by the lease's end, not by a timer.
async fn woken(waiter: tokio::task::JoinHandle<Vec<pb::Lease>>, by: &str) {
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap_or_else(|_| panic!("{by} did not wake the long poll held back by the limit"))
        .unwrap();
    let names: Vec<_> = got.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["second"], "{by}");
}

fn quiet_config() -> baton::config::Config {
    let mut config = test_config();
    config.zombie_cleanup.enabled = false;
    config.orphan_cleanup.enabled = false;
    config.purge.enabled = false;
    config
}

// Each way a lease ends wakes a long poll held back by the concurrency limit at once:
// Complete, Release, the sweepers' reap and the purge.
#[tokio::test]
async fn a_complete_wakes_a_long_poll_held_back_by_the_limit() {
    let mut env = Env::with_config(quiet_config()).await;
    let (lease, waiter) = held_back_waiter(&mut env, agent("first", 0, 60_000)).await;
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    woken(waiter, "Complete").await;
}

#[tokio::test]
async fn a_release_wakes_a_long_poll_held_back_by_the_limit() {
    let mut env = Env::with_config(quiet_config()).await;
    let (lease, waiter) = held_back_waiter(&mut env, agent("first", 0, 60_000)).await;
    // Released for later: "first" goes back behind "second", so this announces nothing of its own.
    let release =
        pb::ReleaseRequest { queue: Q.into(), name: lease.name.clone(), token: lease.token, delay: dur(600_000) };
    env.client.release(release).await.unwrap();
    woken(waiter, "Release").await;
}

#[tokio::test]
async fn a_reap_wakes_a_long_poll_held_back_by_the_limit() {
    // The zombie sweeper alone, every 100 ms, reaping a lease 100 ms past its deadline.
    let mut config = quiet_config();
    config.zombie_cleanup.enabled = true;
    config.zombie_cleanup.threshold_ms = 100;
    config.zombie_cleanup.interval_ms = 100;
    let mut env = Env::with_config(config).await;
    // Dead-lettered by its first failure, so the reap puts nothing back in waiting.
    let first = pb::Agent { max_attempts: 1, ..agent("first", 0, 3_000) };
    let (lease, waiter) = held_back_waiter(&mut env, first).await;
    woken(waiter, "the reap").await;
    let agent = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: lease.name.clone() }).await;
    assert_eq!(agent.unwrap().into_inner().agent.unwrap().state(), pb::AgentState::DeadLettered, "reaped");
}

#[tokio::test]
async fn a_purge_wakes_a_long_poll_held_back_by_the_limit() {
    let mut config = quiet_config();
    config.purge.max_working_age_ms = 100;
    let mut env = Env::with_config(config).await;
    let (lease, waiter) = held_back_waiter(&mut env, agent("first", 0, 100)).await;
    let stuck_after = ms(&lease.deadline) + 100;
    let redis = &env.redis;
    eventually(Duration::from_secs(10), "the lease stuck past the purge's bound", || async move {
        redis.now_ms().await > stuck_after
    })
    .await;
    let purged = admin(&env.baton).await.purge(pb::PurgeRequest { dry_run: false }).await.unwrap().into_inner();
    let actions: Vec<_> = purged.items.iter().map(|i| (i.id.as_str(), i.action.as_str())).collect();
    assert_eq!(actions, [("first", "DEAD_LETTERED")]);
    woken(waiter, "the purge").await;
}

// A THROTTLED completion with retry_after 2 s holds the whole queue: another agent, due all
// along, is granted no earlier than 2 s after the completion (Redis clock).
#[tokio::test]
async fn a_throttled_retry_after_holds_the_queues_bucket() {
    let mut env = Env::start().await;
    let mut a = admin(&env.baton).await;
    register(&mut env.client, Q, vec![agent("api-a", 60_000, 30_000)]).await;
    set_limits(&mut a, Q, limits(0, Some((100.0, 100)))).await;
    let first = acquire(&mut env.client, Q, "w", 1).await.pop().expect("due");
    register(&mut env.client, Q, vec![agent("api-b", 60_000, 30_000)]).await;
    let before = env.redis.now_ms().await;
    let mut req = complete_req(&first, pb::Outcome::Throttled);
    req.retry_after = dur(2_000);
    env.client.complete(req).await.unwrap();
    assert!(acquire(&mut env.client, Q, "w", 1).await.is_empty(), "the bucket is held");
    let h = health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap();
    assert_eq!(h.rate_tokens, 0.0);
    let got = env.client.acquire(long_poll(Q, "w", 1, 30_000)).await.unwrap().into_inner().leases;
    let l = got.first().expect("granted once the hold passed");
    assert_eq!(l.name, "api-b");
    let acquired_at = ms(&l.deadline) - 30_000;
    assert!(acquired_at >= before + 2_000, "granted {} ms after the throttle", acquired_at - before);
}

// Paused: due agents stay waiting; Acquire gets nothing and a long poll keeps waiting; health
// says paused. Resume: the long poll gets its lease, and so does a session.
#[tokio::test]
async fn pausing_a_queue_holds_its_work_and_resume_releases_it() {
    let mut env = Env::start().await;
    let mut a = admin(&env.baton).await;
    register(&mut env.client, Q, vec![agent("a1", 60_000, 30_000), agent("a2", 60_000, 30_000)]).await;
    let paused = a
        .pause(pb::PauseRequest { source: source(pb::SourceKind::Queue, Q), create: false })
        .await
        .unwrap()
        .into_inner();
    assert!(paused.changed);
    let again = a
        .pause(pb::PauseRequest { source: source(pb::SourceKind::Queue, Q), create: false })
        .await
        .unwrap()
        .into_inner();
    assert!(!again.changed, "already paused");

    let mut c = env.client.clone();
    let poll =
        tokio::spawn(async move { c.acquire(long_poll(Q, "poller", 1, 60_000)).await.unwrap().into_inner().leases });
    for _ in 0..3 {
        assert!(acquire(&mut env.client, Q, "w", 10).await.is_empty(), "paused: nothing granted");
    }
    assert!(!poll.is_finished(), "the long poll keeps waiting");
    let h = health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap();
    assert!(h.paused);
    assert_eq!(h.size, 2, "the work stays due");

    let resumed = a
        .resume(pb::ResumeRequest { source: source(pb::SourceKind::Queue, Q), create: false })
        .await
        .unwrap()
        .into_inner();
    assert!(resumed.changed);
    let got = tokio::time::timeout(Duration::from_secs(30), poll).await.expect("the long poll is released").unwrap();
    assert_eq!(got.len(), 1);
    let rest = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(rest.len(), 1, "the other agent is handed out after Resume");
    assert!(!health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap().paused);
}

// A paused receiver delivers nothing to a Subscribe stream; Resume delivers it.
#[tokio::test]
async fn pausing_a_receiver_holds_its_messages_until_resume() {
    const R: &str = "inbox";
    let env = Env::start().await;
    let mut a = admin(&env.baton).await;
    let mut s = ScheduleServiceClient::new(env.baton.channel().await);
    // Scheduled an hour ahead, so nothing is due before the pause; then moved to now.
    let later = pb::ScheduleRequest {
        receiver: R.into(),
        payload: b"hello".to_vec(),
        when: Some(pb::schedule_request::When::Delay(dur(3_600_000).unwrap())),
        ..Default::default()
    };
    let id = s.schedule(later).await.unwrap().into_inner().id;
    assert!(
        a.pause(pb::PauseRequest { source: source(pb::SourceKind::Receiver, R), create: false })
            .await
            .unwrap()
            .into_inner()
            .changed
    );
    s.cancel(pb::CancelRequest { receiver: R.into(), id }).await.unwrap();
    s.schedule(pb::ScheduleRequest { receiver: R.into(), payload: b"hello".to_vec(), ..Default::default() })
        .await
        .unwrap();
    let sub = pb::SubscribeRequest { receiver: R.into(), consumer_id: "c1".into(), max_in_flight: 10 };
    let mut stream = s.subscribe(sub).await.unwrap().into_inner();
    let h = health_of(&mut a, pb::SourceKind::Receiver, R).await.unwrap();
    assert!(h.paused);
    assert_eq!(h.size, 1, "the message stays due");
    assert_eq!(h.in_use, 0, "nothing in flight while paused");

    a.resume(pb::ResumeRequest { source: source(pb::SourceKind::Receiver, R), create: false }).await.unwrap();
    let m = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("delivered after Resume")
        .expect("stream open")
        .unwrap();
    assert_eq!(m.payload, b"hello");
}

// A paused pool hands out nothing: a Claim without a wait gets no resource, one with a wait
// waits in line, and a resource offered meanwhile stays idle. Resume hands the idle resource to
// the waiting claim.
#[tokio::test]
async fn pausing_a_pool_holds_its_resources_and_resume_hands_them_to_the_line() {
    const P: &str = "vms";
    let env = Env::start().await;
    let mut a = admin(&env.baton).await;
    let mut c = ClaimServiceClient::new(env.baton.channel().await);
    let resource = |id: &str| pb::Resource { id: id.into(), attributes: Default::default() };
    c.offer(pb::OfferRequest { request_id: String::new(), pool: P.into(), resources: vec![resource("vm-1")] })
        .await
        .unwrap();
    assert!(
        a.pause(pb::PauseRequest { source: source(pb::SourceKind::Pool, P), create: false })
            .await
            .unwrap()
            .into_inner()
            .changed
    );
    let claim = |wait_ms: u64| pb::ClaimRequest {
        request_id: String::new(),
        hold: None,
        pool: P.into(),
        claimer_id: "c1".into(),
        attributes: Default::default(),
        wait: dur(wait_ms),
    };
    let got = c.claim(claim(0)).await.unwrap().into_inner();
    assert!(got.resource.is_none(), "paused: nothing handed out");
    let mut waiting = c.clone();
    let line = tokio::spawn(async move { waiting.claim(claim(60_000)).await.unwrap().into_inner() });
    eventually(Duration::from_secs(30), "the claim waits in line", || {
        let mut a = a.clone();
        async move { health_of(&mut a, pb::SourceKind::Pool, P).await.is_some_and(|h| h.size == 1) }
    })
    .await;
    c.offer(pb::OfferRequest { request_id: String::new(), pool: P.into(), resources: vec![resource("vm-2")] })
        .await
        .unwrap();
    let h = health_of(&mut a, pb::SourceKind::Pool, P).await.unwrap();
    assert!(h.paused);
    assert_eq!((h.idle, h.in_use), (2, 0), "offered while paused: idle, not handed to the line");
    assert!(!line.is_finished());

    assert!(
        a.resume(pb::ResumeRequest { source: source(pb::SourceKind::Pool, P), create: false })
            .await
            .unwrap()
            .into_inner()
            .changed
    );
    let got = tokio::time::timeout(Duration::from_secs(30), line).await.expect("handed after Resume").unwrap();
    assert_eq!(got.resource.unwrap().id, "vm-1", "the oldest idle resource goes first");
    let h = health_of(&mut a, pb::SourceKind::Pool, P).await.unwrap();
    assert_eq!((h.paused, h.idle, h.in_use), (false, 1, 1));
}

// Limits set, read back by GetHealth, then removed.
#[tokio::test]
async fn limits_round_trip_and_clear() {
    let mut env = Env::start().await;
    let mut a = admin(&env.baton).await;
    register(&mut env.client, Q, vec![agent("a1", 60_000, 30_000)]).await;
    let stored = set_limits(&mut a, Q, limits(7, Some((2.5, 0)))).await.limits.unwrap();
    let rate = stored.rate.unwrap();
    assert_eq!((stored.concurrency, rate.per_second, rate.burst), (7, 2.5, 3), "burst defaults to ceil(rate)");
    let h = health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap();
    assert_eq!(h.limits, Some(stored));
    assert_eq!(h.rate_tokens, 3.0, "a new bucket starts full");
    let aging = pb::QueueLimits { priority_aging: dur(90_000), ..Default::default() };
    let stored = set_limits(&mut a, Q, Some(aging)).await.limits.unwrap();
    assert_eq!((stored.priority_aging, stored.concurrency, stored.rate), (dur(90_000), 0, None), "replaced whole");
    assert_eq!(health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap().limits, Some(stored));
    assert!(set_limits(&mut a, Q, None).await.limits.is_none());
    let h = health_of(&mut a, pb::SourceKind::Queue, Q).await.unwrap();
    assert_eq!(h.limits, None);
}

// Every validation rule names its field, and a refused call changes nothing.
#[tokio::test]
async fn bad_limits_and_sources_are_refused_naming_the_field() {
    let env = Env::start().await;
    let mut a = admin(&env.baton).await;
    let cases: Vec<(&str, Option<pb::QueueLimits>, &str)> = vec![
        ("", None, "queue"),
        ("a:b", None, "queue"),
        (Q, limits(1_000_001, None), "limits.concurrency"),
        (Q, limits(0, Some((0.0, 1))), "limits.rate.per_second"),
        (Q, limits(0, Some((-1.0, 1))), "limits.rate.per_second"),
        (Q, limits(0, Some((f64::NAN, 1))), "limits.rate.per_second"),
        (Q, limits(0, Some((f64::INFINITY, 1))), "limits.rate.per_second"),
        (Q, limits(0, Some((2e6, 1))), "limits.rate.per_second"),
        (Q, limits(0, Some((1.0, 1_000_001))), "limits.rate.burst"),
    ];
    for (queue, l, field) in cases {
        let e = a.set_limits(pb::SetLimitsRequest { queue: queue.into(), limits: l, create: false }).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
    }
    assert!(health_of(&mut a, pb::SourceKind::Queue, Q).await.is_none(), "nothing was written");

    let sources: Vec<(Option<pb::Source>, &str)> = vec![
        (None, "source"),
        (source(pb::SourceKind::Unspecified, Q), "source.kind"),
        (Some(pb::Source { kind: 99, name: Q.into() }), "source.kind"),
        (source(pb::SourceKind::Queue, ""), "source.name"),
        (source(pb::SourceKind::Receiver, "a}b"), "source.name"),
    ];
    for (s, field) in sources {
        let e = a.pause(pb::PauseRequest { source: s.clone(), create: false }).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
        let e = a.resume(pb::ResumeRequest { source: s, create: false }).await.unwrap_err();
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
    }
    assert!(health_of(&mut a, pb::SourceKind::Queue, Q).await.is_none(), "nothing was written");
}

// An operator naming a source that never existed (a typo) is told NOT_FOUND, by Pause, Resume,
// SetLimits and a ListDeadLetters of that source, and nothing is created: no phantom queue.
#[tokio::test]
async fn operator_calls_refuse_unknown_sources_and_create_nothing() {
    let mut env = Env::start().await;
    let mut a = admin(&env.baton).await;
    register(&mut env.client, Q, vec![agent("a1", 60_000, 30_000)]).await;
    let before = env.redis.snapshot().await;
    for kind in [pb::SourceKind::Queue, pb::SourceKind::Pool, pb::SourceKind::Receiver] {
        let s = source(kind, "never-existed");
        let e = a.pause(pb::PauseRequest { source: s.clone(), create: false }).await.unwrap_err();
        assert_eq!((e.code(), reason(&e).as_str()), (Code::NotFound, "NOT_FOUND"), "Pause {kind:?}: {e:?}");
        assert!(e.message().contains("never-existed"), "{}", e.message());
        let e = a.resume(pb::ResumeRequest { source: s.clone(), create: false }).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound, "Resume {kind:?}: {e:?}");
        let e = a.list_dead_letters(pb::ListDeadLettersRequest { source: s, ..Default::default() }).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound, "ListDeadLetters {kind:?}: {e:?}");
    }
    let e = a
        .set_limits(pb::SetLimitsRequest { queue: "never-existed".into(), limits: limits(1, None), create: false })
        .await;
    assert_eq!(e.unwrap_err().code(), Code::NotFound);
    assert_eq!(env.redis.snapshot().await, before, "nothing was created");
    assert!(health_of(&mut a, pb::SourceKind::Queue, "never-existed").await.is_none(), "no phantom queue");
    // The known queue is still served.
    assert!(
        a.pause(pb::PauseRequest { source: source(pb::SourceKind::Queue, Q), create: false })
            .await
            .unwrap()
            .into_inner()
            .changed
    );
}

// An operator declares sources before their first item with `create` (deployment tooling):
// the source is registered (GetHealth lists it), and the first producer's agents run under the
// limits and the pause set ahead of them.
#[tokio::test]
async fn create_declares_a_source_ahead_of_its_first_item() {
    let mut env = Env::start().await;
    let mut a = admin(&env.baton).await;
    let set = pb::SetLimitsRequest { queue: "declared".into(), limits: limits(1, None), create: true };
    let stored = a.set_limits(set.clone()).await.expect("declared").into_inner();
    assert_eq!(stored.limits.map(|l| l.concurrency), Some(1));
    a.set_limits(set).await.expect("declaring again changes nothing");
    let h = health_of(&mut a, pb::SourceKind::Queue, "declared").await.expect("GetHealth lists the declared queue");
    assert_eq!(h.limits.map(|l| l.concurrency), Some(1));
    let paused = pb::PauseRequest { source: source(pb::SourceKind::Queue, "held-back"), create: true };
    assert!(a.pause(paused).await.expect("declared paused").into_inner().changed);
    assert!(health_of(&mut a, pb::SourceKind::Queue, "held-back").await.expect("listed").paused);
    let pool = pb::PauseRequest { source: source(pb::SourceKind::Pool, "declared-pool"), create: true };
    a.pause(pool).await.expect("a pool is declared too");
    assert!(health_of(&mut a, pb::SourceKind::Pool, "declared-pool").await.expect("listed").paused);
    let resumed = pb::ResumeRequest { source: source(pb::SourceKind::Receiver, "declared-receiver"), create: true };
    assert!(!a.resume(resumed).await.expect("a receiver is declared, not paused").into_inner().changed);
    assert!(health_of(&mut a, pb::SourceKind::Receiver, "declared-receiver").await.is_some(), "listed");

    // The first producers arrive: their agents obey what was declared.
    register(&mut env.client, "declared", vec![agent("d1", 60_000, 30_000), agent("d2", 60_000, 30_000)]).await;
    assert_eq!(acquire(&mut env.client, "declared", "w", 2).await.len(), 1, "concurrency 1 holds from the start");
    register(&mut env.client, "held-back", vec![agent("h1", 60_000, 30_000)]).await;
    assert!(acquire(&mut env.client, "held-back", "w", 1).await.is_empty(), "paused from the start");
    a.resume(pb::ResumeRequest { source: source(pb::SourceKind::Queue, "held-back"), create: false }).await.unwrap();
    assert_eq!(acquire(&mut env.client, "held-back", "w", 1).await.len(), 1, "Resume releases it");
}

// A sharded queue cannot take limits (each shard's script sees only its shard), but can be
// paused and resumed: every shard holds its work, and Resume releases all of them.
#[tokio::test]
async fn a_sharded_queue_pauses_but_refuses_limits() {
    let mut config = test_config();
    config.sharding.queues = "hot=3".into();
    let mut env = Env::with_config(config).await;
    let mut a = admin(&env.baton).await;
    let defs: Vec<_> = (0..12).map(|i| agent(&format!("h{i:02}"), 60_000, 30_000)).collect();
    register(&mut env.client, "hot", defs).await;
    let e = a
        .set_limits(pb::SetLimitsRequest { queue: "hot".into(), limits: limits(5, None), create: false })
        .await
        .unwrap_err();
    assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "UNSUPPORTED"));

    a.pause(pb::PauseRequest { source: source(pb::SourceKind::Queue, "hot"), create: false }).await.unwrap();
    assert!(acquire(&mut env.client, "hot", "w", 12).await.is_empty(), "every shard is paused");
    let mut c = env.client.clone();
    let poll =
        tokio::spawn(
            async move { c.acquire(long_poll("hot", "poller", 12, 60_000)).await.unwrap().into_inner().leases },
        );
    a.resume(pb::ResumeRequest { source: source(pb::SourceKind::Queue, "hot"), create: false }).await.unwrap();
    let mut got = tokio::time::timeout(Duration::from_secs(30), poll).await.expect("released").unwrap().len();
    got += acquire(&mut env.client, "hot", "w", 12).await.len();
    assert_eq!(got, 12, "every shard's agents are handed out after Resume");
}
