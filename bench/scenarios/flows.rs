//! flows: work that depends on work, Baton against BullMQ's FlowProducer on the same
//! redis-server in the same run, and Await's round trip.
//!
//! Shapes, each timed from the first submit call to the last step's completion, with the
//! worker connected but idle before the clock starts (Baton: a Session stream opened with no
//! credit, granted after the submit; BullMQ: a Worker created with `autorun: false` and run
//! after the submit):
//! - fan-out: Baton, one parent and N children registered after it (Register calls of at most
//!   1,000, 4 in flight); the parent runs, then Baton's flows task releases the children page
//!   by page. BullMQ cannot make many jobs depend on one (a job has at most one parent, and a
//!   parent runs after its children), so it gets two rows: `bullmq fan`, one parent with N
//!   children in one `FlowProducer.add` (the same jobs and edges, run the other way round: N
//!   children first, then the parent), and `bullmq addbulk`, one job whose processor adds the
//!   N jobs with `Queue.addBulk`, how BullMQ users run N jobs after one.
//! - fan-in: Baton, N parents and one child after all of them: the very shape of `bullmq fan`.
//! - chain: M steps, step i+1 after step i: Baton, one Register of M agents; BullMQ, M nested
//!   jobs in one `FlowProducer.add`. Per step, the hand-off: from the worker sending step i's
//!   completion to step i+1 reaching it.
//!
//! Every worker returns a small result with each step and reads its parents' results (Baton's
//! lease carries them; BullMQ's processor calls `getChildrenValues` on a job with children).
//! Per row: steps (jobs run), submit and total seconds, steps/s over the total (median of the
//! rounds), Redis commands per step (`INFO commandstats`, commands inside scripts included),
//! CPU µs per step of the application process (Baton: this process, the server with its
//! producer and worker; BullMQ: the Node process) and of redis-server. Every step must run
//! exactly once, after its parents, with their results.
//!
//! Await: a producer registers one-shot agents that keep their results (Agent.keep_result: the
//! Await comes after the Register, so the agent may have finished) at a steady rate, one per
//! Register, and calls Await(wait) on each; a worker on a Session stream completes each with a
//! 16-byte result.
//! Round trip = Await answered − Register sent (tokio Instants in this one process).

use std::{
    collections::HashMap,
    process::Stdio,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::pb::{self, agent_service_client::AgentServiceClient};
use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
    sync::mpsc,
    time::Instant,
};
use tonic::transport::Channel;

use crate::lab::{
    bench_config, dur, fmt_ms, histogram, micros, p50_p99_max, process_cpu_seconds, quantile_ms, ts_ms, Baton,
    BoxError, Lab, Result,
};

/// Lease length of every step: far beyond any run.
const TIMEOUT_MS: u64 = 600_000;
const QUEUE: &str = "flows";

pub struct FlowsArgs {
    pub fanout: u32,
    pub chain: u32,
    pub concurrency: u32,
    pub rounds: u32,
    pub parts: Vec<Part>,
    pub await_rate: u32,
    pub await_seconds: u64,
}

/// What the scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// Baton fan-out, BullMQ fan (fan-in) and addbulk.
    Fanout,
    /// Baton fan-in (BullMQ's fan is run by `fanout`).
    Fanin,
    /// Baton and BullMQ chains.
    Chain,
    /// Await round trip at a steady rate.
    Await,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    FanOut,
    FanIn,
    Chain,
}

/// One timed run of one system on one shape.
struct Run {
    steps: u64,
    submit_s: f64,
    total_s: f64,
    commands: u64,
    app_cpu_s: f64,
    redis_cpu_s: f64,
    /// Chain only: hand-off per step (µs), and on Baton its parts.
    handoff: Option<Histogram<u64>>,
    /// Baton chain: Complete sent → its answer (µs).
    complete: Option<Histogram<u64>>,
    /// Baton chain: Redis clock, acquired_at − parent's finished_at (ms).
    redis_handoff_ms: Vec<i64>,
    duplicates: u64,
    missing: u64,
    bad_parents: u64,
}

/// Redis's commands so far, and CPU seconds of this process, of `app` (when another process)
/// and of redis-server.
struct Sample {
    commands: u64,
    this: f64,
    app: f64,
    redis: f64,
}

async fn sample(lab: &mut Lab, app_pid: Option<u32>) -> Result<Sample> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    let commands = info
        .lines()
        .filter_map(|l| l.split_once("calls=").and_then(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok()))
        .sum();
    let app = match app_pid {
        Some(pid) => process_cpu_seconds(&format!("/proc/{pid}/stat"))?,
        None => 0.0,
    };
    Ok(Sample {
        commands,
        this: process_cpu_seconds("/proc/self/stat")?,
        app,
        redis: process_cpu_seconds(&format!("/proc/{}/stat", lab.pid))?,
    })
}

fn agent(name: String, after: Vec<String>) -> pb::Agent {
    pb::Agent {
        name,
        timeout: dur(TIMEOUT_MS),
        after: after
            .into_iter()
            .map(|name| pb::AgentRef { queue: String::new(), name, on_failure: 0, ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

fn register(agents: Vec<pb::Agent>) -> pb::RegisterRequest {
    pb::RegisterRequest { queue: QUEUE.into(), agents, ..Default::default() }
}

/// The Register calls of a shape, in stages: a stage's calls run 4 in flight, after the
/// previous stage's; and how many steps run in all.
fn plan(shape: Shape, n: u32) -> (Vec<Vec<pb::RegisterRequest>>, u64) {
    let batch = bench_config().limits.max_batch as usize;
    match shape {
        Shape::FanOut => {
            let children: Vec<_> = (1..=n).map(|i| agent(format!("c-{i:05}"), vec!["p".into()])).collect();
            let calls = children.chunks(batch).map(|c| register(c.to_vec())).collect();
            (vec![vec![register(vec![agent("p".into(), vec![])])], calls], u64::from(n) + 1)
        }
        Shape::FanIn => {
            let names: Vec<String> = (1..=n).map(|i| format!("p-{i:05}")).collect();
            let parents: Vec<_> = names.iter().map(|p| agent(p.clone(), vec![])).collect();
            let calls = parents.chunks(batch).map(|c| register(c.to_vec())).collect();
            (vec![calls, vec![register(vec![agent("c".into(), names)])]], u64::from(n) + 1)
        }
        Shape::Chain => {
            let steps: Vec<_> = (0..n)
                .map(|i| agent(format!("s-{i:05}"), if i == 0 { vec![] } else { vec![format!("s-{:05}", i - 1)] }))
                .collect();
            (vec![steps.chunks(batch).map(|c| register(c.to_vec())).collect()], u64::from(n))
        }
    }
}

/// Whether a lease carries the parents' results its shape promises (the worker's result is
/// "r-<name>").
fn parents_ok(shape: Shape, n: u32, lease: &pb::Lease) -> bool {
    let ok = |r: &pb::AgentResult| {
        r.finish == pb::Finish::Succeeded as i32 && r.result == format!("r-{}", r.name).as_bytes()
    };
    let name = lease.name.as_str();
    match shape {
        Shape::FanOut if name == "p" => lease.parents.is_empty(),
        Shape::FanOut => lease.parents.len() == 1 && lease.parents[0].name == "p" && ok(&lease.parents[0]),
        Shape::FanIn if name == "c" => lease.parents.len() == n as usize && lease.parents.iter().all(ok),
        Shape::FanIn => lease.parents.is_empty(),
        Shape::Chain => match name.trim_start_matches("s-").parse::<u32>() {
            Ok(0) => lease.parents.is_empty(),
            Ok(i) => {
                lease.parents.len() == 1 && lease.parents[0].name == format!("s-{:05}", i - 1) && ok(&lease.parents[0])
            }
            Err(_) => false,
        },
    }
}

/// Baton on one shape: a fresh in-process server; a worker on one Session stream with credit
/// `concurrency` completes every lease at once with "r-<name>".
async fn run_baton(lab: &mut Lab, shape: Shape, n: u32, concurrency: u32, profile: bool) -> Result<Run> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let result = baton_shape(lab, &baton, shape, n, concurrency, profile).await;
    baton.stop().await?;
    result
}

async fn baton_shape(
    lab: &mut Lab,
    baton: &Baton,
    shape: Shape,
    n: u32,
    concurrency: u32,
    profile: bool,
) -> Result<Run> {
    let (stages, total) = plan(shape, n);
    let producer = AgentServiceClient::new(baton.channel().await?);
    let mut worker = AgentServiceClient::new(baton.channel().await?);
    let (tx, rx) = mpsc::unbounded_channel();
    let open = pb::SessionOpen { queue: QUEUE.into(), worker_id: "flows-worker".into() };
    tx.send(pb::SessionRequest { open: Some(open), ..Default::default() })?;
    let mut stream = worker.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
    let worker_tx = tx.clone();
    let work = tokio::spawn(async move {
        let tx = worker_tx;
        let mut completed = 0u64;
        let mut runs: HashMap<String, u32> = HashMap::new();
        let mut bad = 0u64;
        let (mut handoff, mut complete) = (histogram(), histogram());
        let mut redis_ms = Vec::new();
        let mut sent: Option<Instant> = None;
        while completed < total {
            let r = tokio::time::timeout(Duration::from_secs(120), stream.message())
                .await
                .map_err(|_| format!("baton {shape:?}: no progress for 120 s ({completed} of {total} completed)"))??
                .ok_or("the session ended")?;
            let now = Instant::now();
            completed += r.completed.iter().filter(|c| !c.lease_lost).count() as u64;
            if shape == Shape::Chain && !r.completed.is_empty() {
                if let Some(s) = sent {
                    complete.saturating_record(micros(now - s));
                }
            }
            if r.leases.is_empty() {
                continue;
            }
            let mut completions = Vec::with_capacity(r.leases.len());
            for l in &r.leases {
                *runs.entry(l.name.clone()).or_default() += 1;
                if !parents_ok(shape, n, l) {
                    bad += 1;
                }
                if shape == Shape::Chain && !l.parents.is_empty() {
                    if let Some(s) = sent {
                        handoff.saturating_record(micros(now - s));
                    }
                    let acquired = ts_ms(&l.deadline)? - TIMEOUT_MS as i64;
                    redis_ms.push(acquired - ts_ms(&l.parents[0].finished_at)?);
                }
                completions.push(pb::SessionCompletion {
                    name: l.name.clone(),
                    token: l.token,
                    outcome: pb::Outcome::Success as i32,
                    result: format!("r-{}", l.name).into_bytes(),
                    ..Default::default()
                });
            }
            let credit = completions.len() as u32;
            sent = Some(Instant::now());
            tx.send(pb::SessionRequest { credit, completions, ..Default::default() })?;
        }
        let duplicates = runs.values().map(|&r| u64::from(r.saturating_sub(1))).sum();
        let missing = total.saturating_sub(runs.len() as u64);
        Ok::<_, BoxError>((Instant::now(), duplicates, missing, bad, handoff, complete, redis_ms))
    });

    let profiling = profile && lab.profile_start().await?;
    let before = sample(lab, None).await?;
    let start = Instant::now();
    for stage in stages {
        let calls = stage.into_iter().map(|request| {
            let mut client = producer.clone();
            async move { client.register(request).await }
        });
        futures::stream::iter(calls).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    }
    let submitted = start.elapsed();
    tx.send(pb::SessionRequest { credit: concurrency, ..Default::default() })?;
    let (end, duplicates, missing, bad_parents, handoff, complete, mut redis_handoff_ms) = work.await??;
    let after = sample(lab, None).await?;
    if profiling {
        println!("Baton {shape:?} ({total} steps):");
        lab.profile_print().await?;
    }
    redis_handoff_ms.sort_unstable();
    let chain = shape == Shape::Chain;
    Ok(Run {
        steps: total,
        submit_s: submitted.as_secs_f64(),
        total_s: (end - start).as_secs_f64(),
        commands: after.commands - before.commands,
        app_cpu_s: after.this - before.this,
        redis_cpu_s: after.redis - before.redis,
        handoff: chain.then_some(handoff),
        complete: chain.then_some(complete),
        redis_handoff_ms,
        duplicates,
        missing,
        bad_parents,
    })
}

/// Installs BullMQ (`npm ci` in bench/drain/bullmq) on first use; the flows driver's path.
async fn prepare_bullmq() -> Result<String> {
    let bullmq = std::env::current_dir()?.join("bench/drain/bullmq");
    if !bullmq.join("node_modules/bullmq").exists() {
        eprintln!("flows: installing BullMQ (npm ci)");
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&bullmq)
            .status()
            .await
            .map_err(|e| format!("npm: {e} (install Node.js 18+ and npm)"))?;
        if !status.success() {
            return Err("npm ci in bench/drain/bullmq failed".into());
        }
    }
    Ok(bullmq.join("flows.mjs").display().to_string())
}

/// BullMQ on one shape (`fan`, `addbulk` or `chain`): bench/drain/bullmq/flows.mjs.
async fn run_bullmq(lab: &mut Lab, script: &str, shape: &str, n: u32, concurrency: u32) -> Result<Run> {
    lab.flush().await?;
    let mut child = Command::new("node")
        .arg(script)
        .arg(lab.redis.socket())
        .arg(shape)
        .arg(n.to_string())
        .arg(concurrency.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().ok_or("node exited at start")?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut before = None;
    let limit = Duration::from_secs(600);
    loop {
        let line = tokio::time::timeout(limit, lines.next_line())
            .await
            .map_err(|_| format!("bullmq {shape} did not finish within {limit:?}"))??
            .ok_or_else(|| format!("bullmq {shape} ended without a result"))?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        match v["phase"].as_str() {
            Some("ready") => {
                before = Some(sample(lab, Some(pid)).await?);
                stdin.write_all(b"go\n").await?;
                stdin.flush().await?;
            }
            Some("done") => {
                let after = sample(lab, Some(pid)).await?;
                let before = before.ok_or("done before ready")?;
                let handoff = v["handoff_us"].as_array().filter(|a| !a.is_empty()).map(|a| {
                    let mut h = histogram();
                    for us in a.iter().filter_map(Value::as_u64) {
                        h.saturating_record(us);
                    }
                    h
                });
                let run = Run {
                    steps: v["steps"].as_u64().ok_or("no steps")?,
                    submit_s: v["submit_seconds"].as_f64().ok_or("no submit_seconds")?,
                    total_s: v["seconds"].as_f64().ok_or("no seconds")?,
                    commands: after.commands - before.commands,
                    app_cpu_s: after.app - before.app,
                    redis_cpu_s: after.redis - before.redis,
                    handoff,
                    complete: None,
                    redis_handoff_ms: Vec::new(),
                    duplicates: v["duplicates"].as_u64().unwrap_or(0),
                    missing: v["missing"].as_u64().unwrap_or(u64::MAX),
                    bad_parents: v["bad_parents"].as_u64().unwrap_or(u64::MAX),
                };
                drop(stdin);
                let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
                return Ok(run);
            }
            _ => {}
        }
    }
}

/// The Await round trip at `rate` per second for `seconds` (the first second is warm-up).
struct AwaitRow {
    requests: usize,
    achieved: f64,
    round_trip: Histogram<u64>,
    register: Histogram<u64>,
    to_lease: Histogram<u64>,
    commands_per: f64,
    wrong: u64,
    /// Registers shed by admission control (RESOURCE_EXHAUSTED), not awaited.
    shed: u64,
}

async fn run_await(lab: &mut Lab, rate: u32, seconds: u64) -> Result<AwaitRow> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let result = await_phase(lab, &baton, rate, seconds).await;
    baton.stop().await?;
    result
}

async fn await_phase(lab: &mut Lab, baton: &Baton, rate: u32, seconds: u64) -> Result<AwaitRow> {
    const RESULT: &[u8] = b"0123456789abcdef";
    let queue = "await";
    let total = (u64::from(rate) * seconds) as usize;
    let warmup = rate as usize;
    let base = Instant::now();
    // When each agent's lease reached the worker, in µs since `base` (0: not yet).
    let leased: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let stop = tokio_util::sync::CancellationToken::new();
    let worker = {
        let (channel, leased, stop) = (baton.channel().await?, leased.clone(), stop.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        let open = pb::SessionOpen { queue: queue.into(), worker_id: "await-worker".into() };
        tx.send(pb::SessionRequest { open: Some(open), credit: 100, ..Default::default() })?;
        let mut stream = AgentServiceClient::new(channel)
            .session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
            .await?
            .into_inner();
        tokio::spawn(async move {
            loop {
                let r = tokio::select! {
                    _ = stop.cancelled() => return Ok::<_, BoxError>(()),
                    r = stream.message() => r?.ok_or("the session ended")?,
                };
                if r.leases.is_empty() {
                    continue;
                }
                let at = micros(base.elapsed());
                let completions: Vec<_> = r
                    .leases
                    .iter()
                    .map(|l| {
                        if let Some(i) = l.name.strip_prefix("a-").and_then(|i| i.parse::<usize>().ok()) {
                            if let Some(slot) = leased.get(i) {
                                slot.store(at, Ordering::Relaxed);
                            }
                        }
                        pb::SessionCompletion {
                            name: l.name.clone(),
                            token: l.token,
                            outcome: pb::Outcome::Success as i32,
                            result: RESULT.to_vec(),
                            ..Default::default()
                        }
                    })
                    .collect();
                let credit = completions.len() as u32;
                tx.send(pb::SessionRequest { credit, completions, ..Default::default() })?;
            }
        })
    };
    let producer: Channel = baton.channel().await?;
    let profiling = lab.profile_start().await?;
    let before = sample(lab, None).await?;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    let mut calls = Vec::with_capacity(total);
    let started = Instant::now();
    for i in 0..total {
        tick.tick().await;
        let mut client = AgentServiceClient::new(producer.clone());
        calls.push(tokio::spawn(async move {
            let name = format!("a-{i}");
            let sent = Instant::now();
            // Awaited after its Register answered, so it may finish first: it keeps its result
            // (a plain agent's finish is kept only while an Await waits for it).
            let agent = pb::Agent { name: name.clone(), timeout: dur(60_000), keep_result: true, ..Default::default() };
            let request = pb::RegisterRequest { queue: queue.into(), agents: vec![agent], ..Default::default() };
            match client.register(request).await {
                Ok(_) => {}
                // Shed by admission control (limits.max_inflight_work): counted, not retried.
                Err(e) if e.code() == tonic::Code::ResourceExhausted => return Ok(None),
                Err(e) => return Err(e.into()),
            }
            let registered = Instant::now();
            let r = client
                .r#await(pb::AwaitRequest { queue: queue.into(), name, wait: dur(30_000), after_token: 0 })
                .await?
                .into_inner();
            let answered = Instant::now();
            let right = r.done
                && r.result.as_ref().is_some_and(|x| x.finish == pb::Finish::Succeeded as i32 && x.result == RESULT);
            Ok::<_, BoxError>(Some((sent, registered, answered, right)))
        }));
    }
    let sent_all = started.elapsed();
    let (mut round_trip, mut register, mut to_lease) = (histogram(), histogram(), histogram());
    let (mut wrong, mut shed) = (0, 0);
    for (i, call) in calls.into_iter().enumerate() {
        let Some((sent, registered, answered, right)) = call.await?? else {
            shed += 1;
            continue;
        };
        wrong += u64::from(!right);
        if i < warmup {
            continue;
        }
        round_trip.saturating_record(micros(answered - sent));
        register.saturating_record(micros(registered - sent));
        let leased_at = leased[i].load(Ordering::Relaxed);
        to_lease.saturating_record(leased_at.saturating_sub(micros(sent - base)));
    }
    let after = sample(lab, None).await?;
    if profiling {
        println!("Baton Await round trip ({total} requests):");
        lab.profile_print().await?;
    }
    stop.cancel();
    worker.await??;
    Ok(AwaitRow {
        requests: total,
        achieved: total as f64 / sent_all.as_secs_f64(),
        round_trip,
        register,
        to_lease,
        commands_per: (after.commands - before.commands) as f64 / total as f64,
        wrong,
        shed,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

pub async fn run(lab: &mut Lab, args: &FlowsArgs) -> Result<()> {
    let has = |p: Part| args.parts.contains(&p);
    let script = if has(Part::Fanout) || has(Part::Chain) { Some(prepare_bullmq().await?) } else { None };
    // (row label, runs), in the order rows are printed.
    let mut rows: Vec<(String, Vec<Run>)> = Vec::new();
    let push = |rows: &mut Vec<(String, Vec<Run>)>, label: String, run: Run| match rows
        .iter_mut()
        .find(|(l, _)| *l == label)
    {
        Some((_, v)) => v.push(run),
        None => rows.push((label, vec![run])),
    };
    let (n, m, c) = (args.fanout, args.chain, args.concurrency);
    for round in 1..=args.rounds {
        let profile = round == 1;
        if has(Part::Fanout) {
            eprintln!("flows: round {round}/{}: fan-out, baton", args.rounds);
            push(&mut rows, format!("fan-out 1→{n}  baton"), run_baton(lab, Shape::FanOut, n, c, profile).await?);
            let script = script.as_deref().ok_or("no driver")?;
            eprintln!("flows: round {round}/{}: fan (fan-in), bullmq", args.rounds);
            push(&mut rows, format!("fan {n}→1  bullmq flow"), run_bullmq(lab, script, "fan", n, c).await?);
            eprintln!("flows: round {round}/{}: fan-out by addBulk, bullmq", args.rounds);
            push(&mut rows, format!("fan-out 1→{n}  bullmq addBulk"), run_bullmq(lab, script, "addbulk", n, c).await?);
        }
        if has(Part::Fanin) {
            eprintln!("flows: round {round}/{}: fan-in, baton", args.rounds);
            push(&mut rows, format!("fan-in {n}→1  baton"), run_baton(lab, Shape::FanIn, n, c, profile).await?);
        }
        if has(Part::Chain) {
            eprintln!("flows: round {round}/{}: chain, baton", args.rounds);
            push(&mut rows, format!("chain of {m}  baton"), run_baton(lab, Shape::Chain, m, c, profile).await?);
            let script = script.as_deref().ok_or("no driver")?;
            eprintln!("flows: round {round}/{}: chain, bullmq", args.rounds);
            push(&mut rows, format!("chain of {m}  bullmq flow"), run_bullmq(lab, script, "chain", m, c).await?);
        }
    }
    let mut failed = Vec::new();
    if !rows.is_empty() {
        println!();
        println!(
            "flows: fan {n}, chain {m}, worker concurrency {c}, {} round(s) interleaved, one redis-server (unix socket); \
             times from the first submit call to the last step done",
            args.rounds
        );
        println!(
            "{:<30} {:>6} {:>9} {:>9} {:>9} {:>17} {:>10} {:>13} {:>8}  {:>19}  {:>5} {:>7}",
            "shape  system",
            "steps",
            "submit s",
            "total s",
            "steps/s",
            "(min–max)",
            "cmd/step",
            "µs CPU/step: app",
            "redis",
            "hand-off p50/p99/max",
            "dups",
            "missing"
        );
        let mut medians: Vec<(String, f64)> = Vec::new();
        for (label, runs) in &rows {
            let rates: Vec<f64> = runs.iter().map(|r| r.steps as f64 / r.total_s).collect();
            let med = median(rates.clone());
            medians.push((label.clone(), med));
            let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rates.iter().copied().fold(0.0, f64::max);
            let k = runs.len() as f64;
            let mean = |f: &dyn Fn(&Run) -> f64| runs.iter().map(f).sum::<f64>() / k;
            let mut handoff = histogram();
            for r in runs {
                if let Some(h) = &r.handoff {
                    handoff.add(h)?;
                }
            }
            let dups: u64 = runs.iter().map(|r| r.duplicates).sum();
            let missing: u64 = runs.iter().map(|r| r.missing).sum();
            let bad: u64 = runs.iter().map(|r| r.bad_parents).sum();
            println!(
                "{:<30} {:>6} {:>9.3} {:>9.3} {:>9.0} {:>17} {:>10.2} {:>13.0} {:>8.0}  {:>19}  {:>5} {:>7}",
                label,
                runs[0].steps,
                median(runs.iter().map(|r| r.submit_s).collect()),
                median(runs.iter().map(|r| r.total_s).collect()),
                med,
                format!("({lo:.0}–{hi:.0})"),
                mean(&|r| r.commands as f64 / r.steps as f64),
                mean(&|r| r.app_cpu_s * 1e6 / r.steps as f64),
                mean(&|r| r.redis_cpu_s * 1e6 / r.steps as f64),
                p50_p99_max(&handoff),
                dups,
                missing
            );
            if missing > 0 || dups > 0 || bad > 0 {
                failed.push(format!(
                    "{label}: {missing} missing, {dups} duplicates, {bad} without their parents' results"
                ));
            }
        }
        let rate = |prefix: &str, system: &str| {
            medians.iter().find(|(l, _)| l.starts_with(prefix) && l.ends_with(system)).map(|(_, r)| *r)
        };
        let ratio = |what: &str, a: Option<f64>, b: Option<f64>| {
            if let (Some(a), Some(b)) = (a, b) {
                println!("ratio {what}: {:.2}×", a / b);
            }
        };
        ratio("fan-out: baton / bullmq flow (its fan-in)", rate("fan-out", "baton"), rate("fan ", "bullmq flow"));
        ratio("fan-out: baton / bullmq addBulk", rate("fan-out", "baton"), rate("fan-out", "bullmq addBulk"));
        ratio("fan-in: baton / bullmq flow", rate("fan-in", "baton"), rate("fan ", "bullmq flow"));
        ratio("chain: baton / bullmq flow", rate("chain", "baton"), rate("chain", "bullmq flow"));
        // Where a Baton chain step's time goes.
        let chain: Vec<&Run> = rows
            .iter()
            .filter(|(l, _)| l.starts_with("chain") && l.ends_with("baton"))
            .flat_map(|(_, r)| r.iter())
            .collect();
        if !chain.is_empty() {
            let mut complete = histogram();
            let mut redis_ms: Vec<i64> = Vec::new();
            for r in &chain {
                if let Some(h) = &r.complete {
                    complete.add(h)?;
                }
                redis_ms.extend(&r.redis_handoff_ms);
            }
            redis_ms.sort_unstable();
            println!(
                "baton chain, per step: completion sent → answered {} ms (p50/p99/max); parent finished → child \
                 acquired, Redis clock (whole ms) p50 {} / p99 {} / max {} ms",
                p50_p99_max(&complete),
                quantile_ms(&redis_ms, 0.5),
                quantile_ms(&redis_ms, 0.99),
                redis_ms.last().copied().unwrap_or(0)
            );
        }
    }
    if has(Part::Await) {
        eprintln!("flows: await round trip at {}/s for {} s", args.await_rate, args.await_seconds);
        let a = run_await(lab, args.await_rate, args.await_seconds).await?;
        println!();
        println!(
            "await: one-shot agents registered one per Register at {}/s for {} s (first second not counted), each \
             Awaited (wait 30 s); a Session worker (credit 100) completes each with a 16-byte result",
            args.await_rate, args.await_seconds
        );
        println!(
            "{:>8} {:>10} {:>26} {:>26} {:>26} {:>10} {:>6} {:>6}",
            "requests",
            "achieved/s",
            "round trip p50/p99/max ms",
            "Register p50/p99/max",
            "→ lease p50/p99/max",
            "cmd/req",
            "wrong",
            "shed"
        );
        println!(
            "{:>8} {:>10.0} {:>26} {:>26} {:>26} {:>10.2} {:>6} {:>6}",
            a.requests,
            a.achieved,
            p50_p99_max(&a.round_trip),
            p50_p99_max(&a.register),
            p50_p99_max(&a.to_lease),
            a.commands_per,
            a.wrong,
            a.shed
        );
        let p99 = a.round_trip.value_at_quantile(0.99) as f64 / 1000.0;
        println!("await p99 {} ms against the 5 ms target: {}", fmt_ms(p99), if p99 < 5.0 { "met" } else { "NOT met" });
        if a.wrong > 0 {
            failed.push(format!("await: {} answers without the worker's result", a.wrong));
        }
    }
    crate::lab::print_load();
    if !failed.is_empty() {
        return Err(format!("flows: {}", failed.join("; ")).into());
    }
    Ok(())
}
