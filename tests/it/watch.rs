//! Progress streams (AgentService.WatchAgent), end to end.
//!
//! Invariants checked: a stream starts with a snapshot read after it subscribed, then carries
//! each update of the agent's run — a grant, a heartbeat's progress, a step — in (token,
//! sequence) order, none lost or repeated, then the finish, and ends; a watcher on one replica
//! hears a worker on another; a heartbeat or step of an agent nobody watches sends and writes
//! nothing more than before; a lost subscription (a Redis restart) brings a new snapshot; bad
//! input is INVALID_ARGUMENT naming the field and an unknown agent NOT_FOUND, both writing
//! nothing.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use baton::pb::agent_service_client::AgentServiceClient;
use common::*;
use tonic::{transport::Channel, Code, Streaming};
use tonic_types::StatusExt;

const Q: &str = "watched";

type Updates = Streaming<pb::WatchAgentResponse>;

async fn watch(client: &mut AgentServiceClient<Channel>, name: &str) -> Updates {
    let req = pb::WatchAgentRequest { queue: Q.into(), name: name.into(), after_token: 0, wait: None };
    client.watch_agent(req).await.unwrap().into_inner()
}

/// The next update, within 10 s.
async fn next(updates: &mut Updates) -> pb::WatchAgentResponse {
    tokio::time::timeout(Duration::from_secs(10), updates.message())
        .await
        .expect("an update within 10 s")
        .expect("no error")
        .expect("the stream goes on")
}

/// The stream's end, within 10 s.
async fn ended(updates: &mut Updates) {
    let end = tokio::time::timeout(Duration::from_secs(10), updates.message()).await.expect("the end within 10 s");
    assert!(matches!(end, Ok(None)), "the stream ends after the finish: {end:?}");
}

fn kind(u: &pb::WatchAgentResponse) -> pb::WatchUpdate {
    pb::WatchUpdate::try_from(u.update).unwrap()
}

fn step_names(steps: &[pb::Step]) -> Vec<(String, Vec<u8>)> {
    steps.iter().map(|s| (s.name.clone(), s.result.clone())).collect()
}

fn step(l: &pb::Lease, step: &str, result: &[u8]) -> pb::RecordStepRequest {
    pb::RecordStepRequest {
        queue: Q.into(),
        name: l.name.clone(),
        token: l.token,
        step: step.into(),
        result: result.to_vec(),
    }
}

fn beat(l: &pb::Lease, progress: &str) -> pb::HeartbeatRequest {
    let lease = pb::LeaseRef { queue: Q.into(), name: l.name.clone(), token: l.token, progress: progress.into() };
    pb::HeartbeatRequest { worker_id: "w1".into(), leases: vec![lease] }
}

async fn acquire_one(client: &mut AgentServiceClient<Channel>) -> pb::Lease {
    let req = pb::AcquireRequest { queue: Q.into(), worker_id: "w1".into(), max_leases: 1, wait: dur(10_000) };
    client.acquire(req).await.unwrap().into_inner().leases.pop().expect("a lease within 10 s")
}

// A stream opened before the run: the snapshot (waiting), the grant, progress, a step, more
// progress, then the finish with its result and steps, in that order; then the stream ends.
#[tokio::test]
async fn progress_then_steps_then_finish_arrive_in_order() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("job", 0, 60_000)]).await;
    let mut updates = watch(&mut env.client, "job").await;
    let first = next(&mut updates).await;
    assert_eq!(kind(&first), pb::WatchUpdate::Snapshot);
    assert_eq!((first.state, first.token), (pb::AgentState::Waiting as i32, 0));

    let lease = acquire_one(&mut env.client).await;
    let granted = next(&mut updates).await;
    assert_eq!(kind(&granted), pb::WatchUpdate::Granted, "{granted:?}");
    assert_eq!((granted.token, granted.sequence, granted.attempt), (lease.token, 0, 1));

    env.client.heartbeat(beat(&lease, "10%")).await.unwrap();
    env.client.record_step(step(&lease, "fetch", b"page\x00|1")).await.unwrap();
    env.client.heartbeat(beat(&lease, "50%|half")).await.unwrap();
    let p1 = next(&mut updates).await;
    assert_eq!((kind(&p1), p1.progress.as_str(), p1.sequence), (pb::WatchUpdate::Progress, "10%", 1));
    let s = next(&mut updates).await;
    assert_eq!((kind(&s), s.sequence), (pb::WatchUpdate::Step, 2));
    assert_eq!(step_names(&s.steps), [("fetch".to_string(), b"page\x00|1".to_vec())]);
    let p2 = next(&mut updates).await;
    assert_eq!((kind(&p2), p2.progress.as_str(), p2.sequence), (pb::WatchUpdate::Progress, "50%|half", 3));

    let mut done = complete_req(&lease, pb::Outcome::Success);
    done.result = b"answer".to_vec();
    env.client.complete(done).await.unwrap();
    let finish = next(&mut updates).await;
    assert_eq!(kind(&finish), pb::WatchUpdate::Finished, "{finish:?}");
    let finish = finish.finish.expect("the finish");
    assert!(finish.done);
    let result = finish.result.expect("a result");
    assert_eq!((result.result.as_slice(), result.token), (b"answer".as_slice(), lease.token));
    assert_eq!(step_names(&finish.steps), [("fetch".to_string(), b"page\x00|1".to_vec())]);
    ended(&mut updates).await;
}

// A stream opened mid-run starts with a snapshot of the run (token, attempt, progress, the
// steps so far), then only what comes after it; one opened after a kept finish gets the finish
// at once and ends.
#[tokio::test]
async fn a_stream_opened_mid_run_starts_with_a_snapshot() {
    let mut env = Env::start().await;
    let mut retried = agent("job", 0, 60_000);
    retried.error_interval = dur(1);
    retried.keep_result = true;
    register(&mut env.client, Q, vec![retried]).await;
    let failed = acquire_one(&mut env.client).await;
    env.client.complete(complete_req(&failed, pb::Outcome::Transient)).await.unwrap();
    let lease = acquire_one(&mut env.client).await;
    env.client.record_step(step(&lease, "one", b"1")).await.unwrap();
    env.client.record_step(step(&lease, "two", b"2")).await.unwrap();
    env.client.heartbeat(beat(&lease, "2 of 3")).await.unwrap();

    let mut updates = watch(&mut env.client, "job").await;
    let snap = next(&mut updates).await;
    assert_eq!(kind(&snap), pb::WatchUpdate::Snapshot);
    assert_eq!((snap.state, snap.token, snap.attempt), (pb::AgentState::Working as i32, lease.token, 2));
    assert_eq!(snap.progress, "2 of 3");
    assert_eq!(step_names(&snap.steps), [("one".into(), b"1".to_vec()), ("two".into(), b"2".to_vec())]);

    env.client.record_step(step(&lease, "three", b"3")).await.unwrap();
    let s = next(&mut updates).await;
    assert_eq!((kind(&s), s.token, s.sequence), (pb::WatchUpdate::Step, lease.token, snap.sequence + 1));
    assert_eq!(step_names(&s.steps), [("three".to_string(), b"3".to_vec())]);
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Finished);
    ended(&mut updates).await;

    // Finished and kept: answered at once, with its steps.
    let mut late = watch(&mut env.client, "job").await;
    let finish = next(&mut late).await;
    assert_eq!(kind(&finish), pb::WatchUpdate::Finished);
    assert_eq!(finish.finish.unwrap().steps.len(), 3);
    ended(&mut late).await;
    // Past that finish (after_token): nothing left to follow of a one-shot agent that is gone.
    let req = pb::WatchAgentRequest { queue: Q.into(), name: "job".into(), after_token: lease.token, wait: None };
    assert_eq!(env.client.watch_agent(req).await.unwrap_err().code(), Code::NotFound);
}

// Two replicas on one Redis: two watchers on B hear every update of a worker on A, in order.
#[tokio::test]
async fn watchers_on_another_replica_hear_every_update() {
    let mut env = Env::start().await;
    let b = TestBaton::start(&env.redis.url(), test_config()).await;
    let mut on_b = b.agents().await;
    register(&mut env.client, Q, vec![agent("job", 0, 60_000)]).await;
    let mut watchers = vec![watch(&mut on_b, "job").await, watch(&mut on_b.clone(), "job").await];
    for w in &mut watchers {
        assert_eq!(kind(&next(w).await), pb::WatchUpdate::Snapshot);
    }
    let lease = acquire_one(&mut env.client).await;
    env.client.heartbeat(beat(&lease, "a")).await.unwrap();
    env.client.record_step(step(&lease, "s", b"r")).await.unwrap();
    env.client.heartbeat(beat(&lease, "b")).await.unwrap();
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    for w in &mut watchers {
        let mut seen = Vec::new();
        for _ in 0..5 {
            let u = next(w).await;
            seen.push((kind(&u), u.sequence, u.progress.clone()));
        }
        use pb::WatchUpdate::*;
        let expected = [(Granted, 0, ""), (Progress, 1, "a"), (Step, 2, ""), (Progress, 3, "b"), (Finished, 0, "")];
        let expected: Vec<_> = expected.iter().map(|(k, n, p)| (*k, *n, p.to_string())).collect();
        assert_eq!(seen, expected);
        ended(w).await;
    }
    drop(b);
}

// A burst of heartbeats and steps, sent back to back from several tasks: every update reaches
// the stream once, in sequence order with no gap. Then each update's time from the heartbeat's
// call to its arrival, one at a time (printed: p50 and p99; no timed assertion).
#[tokio::test]
async fn no_update_is_lost_under_a_burst() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("job", 0, 60_000)]).await;
    let mut updates = watch(&mut env.client, "job").await;
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Snapshot);
    let lease = acquire_one(&mut env.client).await;
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Granted);

    const BURST: u64 = 300;
    let mut tasks = Vec::new();
    for t in 0..4 {
        let (mut c, l) = (env.client.clone(), lease.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..BURST / 4 {
                if i % 10 == 0 {
                    c.record_step(step(&l, &format!("s{t}-{i}"), b"x")).await.unwrap();
                } else {
                    c.heartbeat(beat(&l, &format!("{t}-{i}"))).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for n in 1..=BURST {
        let u = next(&mut updates).await;
        assert_eq!((u.token, u.sequence), (lease.token, n), "update {n} of the burst");
    }

    let mut took = Vec::new();
    for i in 0..200 {
        let sent = Instant::now();
        env.client.heartbeat(beat(&lease, &format!("p{i}"))).await.unwrap();
        let u = next(&mut updates).await;
        took.push(sent.elapsed());
        assert_eq!(u.progress, format!("p{i}"));
    }
    took.sort();
    println!(
        "heartbeat → WatchAgent update: p50 {:?}, p99 {:?}, max {:?} ({} samples)",
        took[took.len() / 2],
        took[took.len() * 99 / 100],
        took[took.len() - 1],
        took.len()
    );
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Finished);
    ended(&mut updates).await;
}

/// Starts `redis-cli MONITOR` on `redis`; returns the process and its lines.
fn monitor(redis: &TestRedis) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let socket = redis.dir.path().join("redis.sock");
    let mut child = Command::new("redis-cli")
        .arg("-s")
        .arg(&socket)
        .arg("MONITOR")
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// The commands the heartbeatLeases and recordStep scripts ran between the marks `from` and
/// `to` (ECHOes sent on a connection of the test's own), by name, sorted. A script's commands
/// follow its FCALL line (Redis runs one script at a time).
fn script_commands(lines: &std::sync::mpsc::Receiver<String>, from: &str, to: &str) -> Vec<String> {
    let (mut started, mut ours) = (false, false);
    let mut out = Vec::new();
    loop {
        let line = lines.recv_timeout(Duration::from_secs(10)).expect("MONITOR goes on");
        if line.contains(&format!("\"ECHO\" \"{from}\"")) {
            started = true;
        } else if line.contains(&format!("\"ECHO\" \"{to}\"")) {
            break;
        } else if let Some(command) = line.split(" lua] ").nth(1) {
            if started && ours {
                out.push(command.split('"').nth(1).unwrap().to_lowercase());
            }
        } else {
            let args: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
            ours = matches!(baton::store::scripts::script_called(&args), Some("heartbeatLeases" | "recordStep"));
        }
    }
    out.sort();
    out
}

async fn echo(redis: &TestRedis, text: &str) {
    let _: String = redis::cmd("ECHO").arg(text).query_async(&mut redis.conn().await).await.unwrap();
}

// Pay for use: a heartbeat with progress and a step of an agent nobody watches run exactly
// the commands they ran before watching existed (read and extend the lease, record progress
// and the worker; read and append the steps): no PUBLISH, no check, no write more. The same
// calls on a watched agent announce each.
#[tokio::test]
async fn an_unwatched_heartbeat_publishes_nothing() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("plain", 0, 60_000), agent("seen", 0, 60_000)]).await;
    let plain = acquire_one(&mut env.client).await;
    let (mut mon, lines) = monitor(&env.redis);
    // MONITOR is on once it shows a command sent after it started.
    loop {
        echo(&env.redis, "ready").await;
        if lines.recv_timeout(Duration::from_secs(10)).expect("MONITOR answers").contains("\"ECHO\" \"ready\"") {
            break;
        }
    }
    echo(&env.redis, "plain-start").await;
    env.client.heartbeat(beat(&plain, "half")).await.unwrap();
    env.client.record_step(step(&plain, "one", b"1")).await.unwrap();
    echo(&env.redis, "plain-end").await;
    let plain_commands = script_commands(&lines, "plain-start", "plain-end");
    // heartbeatLeases: TIME, HGET the lease, ZADD XX its deadline, HSET its progress, ZADD the
    // worker; recordStep: HGET the lease, HGET the steps, TIME, HSET the steps.
    let expected = ["hget", "hget", "hget", "hset", "hset", "time", "time", "zadd", "zadd"];
    assert_eq!(plain_commands, expected, "an unwatched agent's heartbeat and step");

    let seen = acquire_one(&mut env.client).await;
    let mut updates = watch(&mut env.client, "seen").await;
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Snapshot);
    echo(&env.redis, "seen-start").await;
    env.client.heartbeat(beat(&seen, "half")).await.unwrap();
    env.client.record_step(step(&seen, "one", b"1")).await.unwrap();
    echo(&env.redis, "seen-end").await;
    let seen_commands = script_commands(&lines, "seen-start", "seen-end");
    assert_eq!(seen_commands.iter().filter(|c| *c == "publish").count(), 2, "{seen_commands:?}");
    let _ = mon.kill();
    let _ = mon.wait();
}

// A Redis restart drops the replica's subscription: once it is back the stream sends a new
// snapshot, and goes on with the updates that follow.
#[tokio::test]
async fn a_lost_subscription_brings_a_new_snapshot() {
    let redis = TestRedis::with_persistence(baton::runtime::embedded::Persistence::Always).await;
    let baton = TestBaton::start(&redis.url(), test_config()).await;
    let mut env = Env { redis, client: baton.agents().await, baton };
    register(&mut env.client, Q, vec![agent("job", 0, 600_000)]).await;
    let lease = acquire_one(&mut env.client).await;
    let mut updates = watch(&mut env.client, "job").await;
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Snapshot);

    env.redis.kill().await;
    env.redis.restart().await;
    let again = tokio::time::timeout(Duration::from_secs(30), updates.message())
        .await
        .expect("a new snapshot within 30 s of the restart")
        .unwrap()
        .unwrap();
    assert_eq!(kind(&again), pb::WatchUpdate::Snapshot, "{again:?}");
    assert_eq!(again.token, lease.token);
    eventually(Duration::from_secs(20), "a heartbeat after the restart", || {
        let mut c = env.client.clone();
        let b = beat(&lease, "after");
        async move { c.heartbeat(b).await.is_ok() }
    })
    .await;
    let mut u = next(&mut updates).await;
    // Another resync may come first (the subscription is confirmed again).
    while kind(&u) == pb::WatchUpdate::Snapshot && u.progress != "after" {
        u = next(&mut updates).await;
    }
    assert_eq!(u.progress, "after", "{u:?}");
}

// Bad input is INVALID_ARGUMENT naming the field; an unknown agent is NOT_FOUND; neither writes.
#[tokio::test]
async fn bad_or_unknown_requests_write_nothing() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("job", 0, 60_000)]).await;
    let before = env.redis.snapshot().await;
    let base = pb::WatchAgentRequest { queue: Q.into(), name: "job".into(), after_token: 0, wait: None };
    for (req, field) in [
        (pb::WatchAgentRequest { queue: "".into(), ..base.clone() }, "queue"),
        (pb::WatchAgentRequest { name: "a b".into(), ..base.clone() }, "name"),
        (pb::WatchAgentRequest { wait: Some(prost_types::Duration { seconds: -1, nanos: 0 }), ..base.clone() }, "wait"),
    ] {
        let e = env.client.watch_agent(req).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        let bad = e.get_details_bad_request().expect("BadRequest");
        assert_eq!(bad.field_violations[0].field, field);
    }
    let unknown = pb::WatchAgentRequest { name: "nobody".into(), ..base.clone() };
    assert_eq!(env.client.watch_agent(unknown).await.unwrap_err().code(), Code::NotFound);
    assert_eq!(env.redis.snapshot().await, before, "a refused WatchAgent changed Redis");
    // A short wait ends the stream without a finish.
    let mut short =
        env.client.watch_agent(pb::WatchAgentRequest { wait: dur(300), ..base }).await.unwrap().into_inner();
    assert_eq!(kind(&next(&mut short).await), pb::WatchUpdate::Snapshot);
    ended(&mut short).await;
}

// `baton watch QUEUE NAME` prints the snapshot, each update as it comes, then the finish, and
// exits 0; the real binary against a live Baton.
#[tokio::test]
async fn the_cli_prints_updates_until_the_finish() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("job", 0, 60_000)]).await;
    let lease = acquire_one(&mut env.client).await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.args(["watch", Q, "job", "--addr", &env.baton.addr.to_string()]).env_remove("BATON_TOKEN");
    let cli = tokio::spawn(async move { cmd.output().await.unwrap() });
    // The CLI's stream marks the lease watched: its progress is announced from then on.
    let redis = &env.redis;
    eventually(Duration::from_secs(30), "the CLI watches the run", || async move {
        let mut conn = redis.conn().await;
        let lease: String =
            redis::cmd("HGET").arg(format!("baton:{{q:{Q}}}:leases")).arg("job").query_async(&mut conn).await.unwrap();
        // "token|worker|acquired_at|timeout|flags|progress": flags "w<n>" when watched.
        lease.split('|').nth(4).is_some_and(|flags| flags.starts_with('w'))
    })
    .await;
    env.client.heartbeat(beat(&lease, "halfway")).await.unwrap();
    env.client.record_step(step(&lease, "fetch", b"page")).await.unwrap();
    let mut done = complete_req(&lease, pb::Outcome::Success);
    done.result = b"all done".to_vec();
    env.client.complete(done).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), cli).await.expect("the CLI ends at the finish").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with(&format!("working: token {} attempt 1", lease.token)), "{stdout}");
    assert_eq!(lines[1], "progress: halfway", "{stdout}");
    assert!(lines[2].starts_with("step fetch at ") && lines[2].ends_with(": page"), "{stdout}");
    assert!(stdout.contains("succeeded") && stdout.contains("all done"), "{stdout}");
}

// A worker on the Session stream: its heartbeats' progress and its steps reach the watcher as
// the unary calls' do, then the finish its completion makes.
#[tokio::test]
async fn a_session_worker_s_progress_and_steps_are_streamed() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("job", 0, 60_000)]).await;
    let mut updates = watch(&mut env.client, "job").await;
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Snapshot);
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let open = pb::SessionOpen { queue: Q.into(), worker_id: "w1".into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() }).await.unwrap();
    let mut session = env.client.session(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    let lease = loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), session.message()).await.unwrap().unwrap().unwrap();
        if let Some(l) = msg.leases.into_iter().next() {
            break l;
        }
    };
    assert_eq!(kind(&next(&mut updates).await), pb::WatchUpdate::Granted);
    let beat = pb::SessionLease { name: "job".into(), token: lease.token, progress: "via session".into() };
    tx.send(pb::SessionRequest { heartbeats: vec![beat], ..Default::default() }).await.unwrap();
    let p = next(&mut updates).await;
    assert_eq!((kind(&p), p.progress.as_str(), p.sequence), (pb::WatchUpdate::Progress, "via session", 1));
    let step = pb::SessionStep { name: "job".into(), token: lease.token, step: "s1".into(), result: b"r1".to_vec() };
    let done = pb::SessionCompletion {
        name: "job".into(),
        token: lease.token,
        outcome: pb::Outcome::Success as i32,
        ..Default::default()
    };
    tx.send(pb::SessionRequest { steps: vec![step], completions: vec![done], ..Default::default() }).await.unwrap();
    let s = next(&mut updates).await;
    assert_eq!((kind(&s), s.sequence), (pb::WatchUpdate::Step, 2));
    assert_eq!(step_names(&s.steps), [("s1".to_string(), b"r1".to_vec())]);
    let f = next(&mut updates).await;
    assert_eq!(kind(&f), pb::WatchUpdate::Finished);
    assert_eq!(step_names(&f.finish.unwrap().steps), [("s1".to_string(), b"r1".to_vec())]);
    ended(&mut updates).await;
}
