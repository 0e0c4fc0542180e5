//! durable: what durable execution costs, each figure against its reference in the same run.
//!
//! - steps: R runs of one one-shot agent whose worker records S steps (Session steps, one at a
//!   time, each after the previous one's answer, as a handler awaits them) and then completes,
//!   against R chains of S one-shot agents (step i+1 registered after step i, one Register per
//!   chain), each run by the same worker on the same Session stream. Per row: Redis commands per
//!   run or chain, their whole life from Register to finish (`INFO commandstats`, commands inside
//!   scripts included), Redis and app CPU per run, and runs/s. The ratio steps / chain is the
//!   figure: a run of S steps should cost at most 1.5 × S chained agents.
//!
//! - signal: agents registered waiting for an event (`Agent.wait_for`, an approval gate), then
//!   signalled at a steady rate (one Signal call each, from this process); a worker on a Session
//!   stream completes every lease at once. Per signal: Signal sent → the lease carrying its event
//!   reaching the worker (p50/p99/max, µs in this one process), against a Redis PING round trip
//!   measured in the same run; Redis commands per signalled run (Register to finish).
//! - watch: K agents held by a worker, each followed by a WatchAgent stream; the worker sends
//!   heartbeats with progress at a steady rate, one lease each, taking turns. Per update:
//!   Heartbeat sent → the progress reaching its streaming caller (p50/p99/max, µs in this one
//!   process), against the Heartbeat call's own round trip in the same run; and Redis commands
//!   per heartbeat, watched against unwatched (the same heartbeats before the streams open).
//!
//! Every run must finish exactly once with every step recorded once; a chain's every agent must
//! run exactly once, after its parent; every signalled agent's lease must carry its event and
//! payload, once.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::pb::{self, agent_service_client::AgentServiceClient};
use futures::{StreamExt, TryStreamExt};
use tokio::{sync::mpsc, time::Instant};

use super::measure::{noise_floor, slowlog_read, slowlog_start, slowlog_stop};
use crate::lab::{
    bench_config, dur, histogram, micros, p50_p99_max, process_cpu_seconds, Baton, BoxError, Lab, Result,
};

const TIMEOUT_MS: u64 = 600_000;

pub struct DurableArgs {
    /// Runs (and chains) per row.
    pub runs: u32,
    /// Steps per run (and agents per chain).
    pub steps: u32,
    /// Runs in flight on the worker's Session stream (its credit).
    pub concurrency: u32,
    pub parts: Vec<Part>,
    /// Signals per second.
    pub signal_rate: u32,
    /// Seconds of signals (the first is warm-up).
    pub signal_seconds: u64,
    /// Heartbeats with progress per second (watch).
    pub watch_rate: u32,
    /// Seconds of heartbeats (the first is warm-up).
    pub watch_seconds: u64,
    /// Agents held and watched at once.
    pub watch_agents: u32,
}

/// What the scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// A run of S steps against a chain of S one-shot agents, in Redis commands.
    Steps,
    /// Signal → the lease carrying the event, at a steady rate.
    Signal,
    /// Heartbeat progress → the WatchAgent stream, at a steady rate.
    Watch,
}

/// Redis's commands so far and CPU seconds of this process and of redis-server.
struct Sample {
    commands: u64,
    app: f64,
    redis: f64,
}

async fn sample(lab: &mut Lab) -> Result<Sample> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    let commands = info
        .lines()
        .filter_map(|l| l.split_once("calls=").and_then(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok()))
        .sum();
    Ok(Sample {
        commands,
        app: process_cpu_seconds("/proc/self/stat")?,
        redis: process_cpu_seconds(&format!("/proc/{}/stat", lab.pid))?,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One agent per run, recording S steps.
    Steps,
    /// S chained one-shot agents per run.
    Chain,
}

struct Row {
    shape: Shape,
    runs: u32,
    seconds: f64,
    commands: u64,
    app_cpu_s: f64,
    redis_cpu_s: f64,
    /// Runs (chains) that did not finish exactly as promised.
    wrong: u64,
}

fn one_shot(name: String, after: Option<String>) -> pb::Agent {
    pb::Agent {
        name,
        timeout: dur(TIMEOUT_MS),
        after: after.into_iter().map(|name| pb::AgentRef { name, ..Default::default() }).collect(),
        ..Default::default()
    }
}

/// One shape: a fresh in-process Baton; the Registers (4 in flight), then a worker on one Session
/// stream of credit `concurrency` runs everything. Timed and counted from the first Register to
/// the last finish.
async fn run_shape(lab: &mut Lab, shape: Shape, args: &DurableArgs) -> Result<Row> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let result = shape_on(lab, &baton, shape, args).await;
    baton.stop().await?;
    result
}

async fn shape_on(lab: &mut Lab, baton: &Baton, shape: Shape, args: &DurableArgs) -> Result<Row> {
    let (runs, steps) = (args.runs, args.steps);
    let queue = "durable";
    let registers: Vec<pb::RegisterRequest> = (0..runs)
        .map(|r| {
            let agents = match shape {
                Shape::Steps => vec![one_shot(format!("r{r}"), None)],
                Shape::Chain => (0..steps)
                    .map(|s| one_shot(format!("r{r}-{s}"), (s > 0).then(|| format!("r{r}-{}", s - 1))))
                    .collect(),
            };
            pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() }
        })
        .collect();
    // Leases the worker completes: one per run (steps) or per chain step.
    let finishes = u64::from(runs) * if shape == Shape::Steps { 1 } else { u64::from(steps) };
    let mut worker = AgentServiceClient::new(baton.channel().await?);
    let (tx, rx) = mpsc::unbounded_channel();
    let open = pb::SessionOpen { queue: queue.into(), worker_id: "durable-worker".into() };
    tx.send(pb::SessionRequest { open: Some(open), ..Default::default() })?;
    let mut stream = worker.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
    let worker_tx = tx.clone();
    let work = tokio::spawn(async move {
        let tx = worker_tx;
        let mut completed = 0u64;
        let mut wrong = 0u64;
        // Leases seen per agent name, and each run's recorded steps so far.
        let mut leased: HashMap<String, u32> = HashMap::new();
        let mut recorded: HashMap<String, u32> = HashMap::new();
        let complete = |name: &str, token: u64| pb::SessionCompletion {
            name: name.to_string(),
            token,
            outcome: pb::Outcome::Success as i32,
            result: b"done".to_vec(),
            ..Default::default()
        };
        let step = |name: &str, token: u64, i: u32| pb::SessionStep {
            name: name.to_string(),
            token,
            step: format!("s{i}"),
            result: format!("step {i}").into_bytes(),
        };
        while completed < finishes {
            let r = tokio::time::timeout(Duration::from_secs(120), stream.message())
                .await
                .map_err(|_| format!("durable {shape:?}: no progress for 120 s ({completed} of {finishes} done)"))??
                .ok_or("the session ended")?;
            completed += r.completed.iter().filter(|c| !c.lease_lost).count() as u64;
            wrong += r.completed.iter().filter(|c| c.lease_lost).count() as u64;
            let mut request = pb::SessionRequest::default();
            for l in &r.leases {
                *leased.entry(l.name.clone()).or_default() += 1;
                match shape {
                    Shape::Steps => request.steps.push(step(&l.name, l.token, 0)),
                    Shape::Chain => {
                        let first = l.name.ends_with("-0");
                        if first != l.parents.is_empty() {
                            wrong += 1;
                        }
                        request.completions.push(complete(&l.name, l.token));
                    }
                }
            }
            for s in &r.steps {
                let done = recorded.entry(s.name.clone()).or_default();
                if s.lease_lost || !s.refused.is_empty() || !s.response.as_ref().is_some_and(|x| x.recorded) {
                    wrong += 1;
                }
                *done += 1;
                if *done < steps {
                    request.steps.push(step(&s.name, s.token, *done));
                } else {
                    request.completions.push(complete(&s.name, s.token));
                }
            }
            request.credit = request.completions.len() as u32;
            if !request.steps.is_empty() || !request.completions.is_empty() {
                tx.send(request)?;
            }
        }
        wrong += leased.values().map(|&n| u64::from(n.saturating_sub(1))).sum::<u64>();
        wrong += finishes.saturating_sub(leased.len() as u64);
        Ok::<_, BoxError>(wrong)
    });
    let producer = AgentServiceClient::new(baton.channel().await?);
    let before = sample(lab).await?;
    let start = Instant::now();
    let calls = registers.into_iter().map(|request| {
        let mut client = producer.clone();
        async move { client.register(request).await }
    });
    futures::stream::iter(calls).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    tx.send(pb::SessionRequest { credit: args.concurrency, ..Default::default() })?;
    let wrong = work.await??;
    let seconds = start.elapsed().as_secs_f64();
    let after = sample(lab).await?;
    Ok(Row {
        shape,
        runs,
        seconds,
        commands: after.commands - before.commands,
        app_cpu_s: after.app - before.app,
        redis_cpu_s: after.redis - before.redis,
        wrong,
    })
}

pub async fn run(lab: &mut Lab, args: &DurableArgs) -> Result<()> {
    if args.parts.contains(&Part::Steps) {
        run_steps(lab, args).await?;
    }
    if args.parts.contains(&Part::Signal) {
        run_signal(lab, args).await?;
    }
    if args.parts.contains(&Part::Watch) {
        lab.flush().await?;
        let baton = Baton::start(&lab.url(), bench_config()).await?;
        let result = run_watch(lab, &baton, args).await;
        baton.stop().await?;
        result?;
    }
    Ok(())
}

async fn run_steps(lab: &mut Lab, args: &DurableArgs) -> Result<()> {
    slowlog_start(lab).await?;
    // Interleaved, two rounds each, so a passing load on the machine meets both shapes.
    let mut rows = Vec::new();
    for round in 1..=2 {
        for shape in [Shape::Steps, Shape::Chain] {
            eprintln!("durable: round {round}/2: {shape:?}");
            rows.push(run_shape(lab, shape, args).await?);
        }
    }
    let slow = slowlog_read(lab).await?;
    slowlog_stop(lab).await?;
    let (runs, steps) = (args.runs, args.steps);
    println!();
    println!(
        "durable steps: {runs} runs of one agent recording {steps} steps (Session steps, one at a time) against \
         {runs} chains of {steps} one-shot agents; worker credit {}; whole life, Register to finish",
        args.concurrency
    );
    println!(
        "{:<22} {:>6} {:>8} {:>9} {:>12} {:>15} {:>15} {:>6}",
        "shape", "runs", "s", "runs/s", "cmd/run", "µs Redis/run", "µs app/run", "wrong"
    );
    let per = |r: &Row, v: f64| v / f64::from(r.runs);
    for r in &rows {
        let label = match r.shape {
            Shape::Steps => format!("{steps}-step run"),
            Shape::Chain => format!("chain of {steps} agents"),
        };
        println!(
            "{label:<22} {:>6} {:>8.2} {:>9.0} {:>12.1} {:>15.0} {:>15.0} {:>6}",
            r.runs,
            r.seconds,
            f64::from(r.runs) / r.seconds,
            per(r, r.commands as f64),
            per(r, r.redis_cpu_s * 1e6),
            per(r, r.app_cpu_s * 1e6),
            r.wrong
        );
    }
    let mean = |shape: Shape, f: &dyn Fn(&Row) -> f64| {
        let v: Vec<f64> = rows.iter().filter(|r| r.shape == shape).map(f).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let commands = |r: &Row| per(r, r.commands as f64);
    let redis = |r: &Row| per(r, r.redis_cpu_s);
    let ratio = mean(Shape::Steps, &commands) / mean(Shape::Chain, &commands);
    println!(
        "steps / chain: {ratio:.2}× the Redis commands (target ≤ 1.5×: {}), {:.2}× the Redis CPU",
        if ratio <= 1.5 { "met" } else { "NOT met" },
        mean(Shape::Steps, &redis) / mean(Shape::Chain, &redis)
    );
    println!("{}", noise_floor(&slow));
    let wrong: u64 = rows.iter().map(|r| r.wrong).sum();
    if wrong > 0 {
        return Err(
            format!("durable steps: {wrong} runs or chain steps did not finish exactly once as promised").into()
        );
    }
    Ok(())
}

/// How a signal-part round makes an agent due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trigger {
    /// A Signal to an agent registered waiting for the event "go".
    Signal,
    /// The reference: a Register of a plain one-shot agent, due at once.
    Register,
}

/// One signal-part round: what reached the worker and what it cost.
struct TriggerRow {
    achieved: f64,
    to_lease: hdrhistogram::Histogram<u64>,
    commands_per: f64,
}

/// Signal → lease: `rate` × `seconds` agents registered waiting for the event "go", then one
/// Signal each at `rate`; and the reference, a Register of one plain one-shot agent each at the
/// same rate. A worker on a Session stream (credit 100) completes each lease at once.
async fn run_signal(lab: &mut Lab, args: &DurableArgs) -> Result<()> {
    let ping = lab.ping_rtt(2_000).await?;
    let mut rows = Vec::new();
    for trigger in [Trigger::Register, Trigger::Signal] {
        eprintln!("durable: {trigger:?} → lease");
        lab.flush().await?;
        let baton = Baton::start(&lab.url(), bench_config()).await?;
        let row = trigger_round(lab, &baton, args, trigger).await;
        baton.stop().await?;
        rows.push((trigger, row?));
    }
    let (rate, seconds) = (args.signal_rate, args.signal_seconds);
    println!();
    println!(
        "durable signal: {} agents at {rate}/s, the first second warm-up; a worker on a Session stream (credit 100) \
         completes each lease at once",
        u64::from(rate) * seconds
    );
    for (trigger, row) in &rows {
        let label = match trigger {
            Trigger::Signal => "Signal sent → lease with its event ",
            Trigger::Register => "Register sent → lease (a plain job)",
        };
        println!(
            "{label}: {} ms (p50/p99/max), {:.0}/s achieved, {:.1} Redis commands per run (Register to finish)",
            p50_p99_max(&row.to_lease),
            row.achieved,
            row.commands_per
        );
    }
    println!("Redis PING round trip, same run (the floor):     {} ms (p50/p99/max)", p50_p99_max(&ping));
    if let Some((_, row)) = rows.iter().find(|(t, _)| *t == Trigger::Signal) {
        let p99_ms = row.to_lease.value_at_quantile(0.99) as f64 / 1000.0;
        println!(
            "signal → lease p99 {p99_ms:.2} ms (target ≤ 5 ms: {})",
            if p99_ms <= 5.0 { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

async fn trigger_round(lab: &mut Lab, baton: &Baton, args: &DurableArgs, trigger: Trigger) -> Result<TriggerRow> {
    let queue = "signals";
    let (rate, seconds) = (args.signal_rate, args.signal_seconds);
    let total = (u64::from(rate) * seconds) as usize;
    let warmup = rate as usize;
    let batch = bench_config().limits.max_batch as usize;
    let producer = AgentServiceClient::new(baton.channel().await?);
    let before = sample(lab).await?;
    let names: Vec<String> = (0..total).map(|i| format!("s-{i}")).collect();
    let agent = |name: &str, gated: bool| pb::Agent {
        name: name.to_string(),
        timeout: dur(TIMEOUT_MS),
        payload: name.as_bytes().to_vec(),
        wait_for: gated.then(|| pb::WaitFor { event: "go".into(), ..Default::default() }),
        ..Default::default()
    };
    if trigger == Trigger::Signal {
        let registers =
            names.chunks(batch).map(|chunk| {
                let agents = chunk.iter().map(|name| agent(name, true)).collect();
                let mut client = producer.clone();
                async move {
                    client.register(pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() }).await
                }
            });
        futures::stream::iter(registers).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    }

    let base = Instant::now();
    // When each agent's lease reached the worker, µs since `base` (0: not yet).
    let leased: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let wrong = Arc::new(AtomicU64::new(0));
    let worker = {
        let (leased, wrong) = (leased.clone(), wrong.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        let open = pb::SessionOpen { queue: queue.into(), worker_id: "signal-worker".into() };
        tx.send(pb::SessionRequest { open: Some(open), credit: 100, ..Default::default() })?;
        let mut stream = AgentServiceClient::new(baton.channel().await?)
            .session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
            .await?
            .into_inner();
        tokio::spawn(async move {
            let mut finished = 0usize;
            while finished < total {
                let r = tokio::time::timeout(Duration::from_secs(60), stream.message())
                    .await
                    .map_err(|_| format!("durable {trigger:?}: no lease for 60 s ({finished} of {total} finished)"))??
                    .ok_or("the session ended")?;
                finished += r.completed.iter().filter(|c| !c.lease_lost).count();
                if r.leases.is_empty() {
                    continue;
                }
                let at = micros(base.elapsed());
                let mut completions = Vec::with_capacity(r.leases.len());
                for l in &r.leases {
                    let i = l.name.strip_prefix("s-").and_then(|i| i.parse::<usize>().ok());
                    let event_ok = match trigger {
                        Trigger::Signal => l
                            .event
                            .as_ref()
                            .is_some_and(|e| e.event == "go" && !e.timed_out && e.payload == l.name.as_bytes()),
                        Trigger::Register => l.event.is_none(),
                    };
                    match i.and_then(|i| leased.get(i)) {
                        Some(slot) if event_ok && slot.swap(at, Ordering::Relaxed) == 0 => {}
                        _ => {
                            wrong.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    completions.push(pb::SessionCompletion {
                        name: l.name.clone(),
                        token: l.token,
                        outcome: pb::Outcome::Success as i32,
                        ..Default::default()
                    });
                }
                let credit = completions.len() as u32;
                tx.send(pb::SessionRequest { credit, completions, ..Default::default() })?;
            }
            Ok::<_, BoxError>(())
        })
    };
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    let mut calls = Vec::with_capacity(total);
    let started = Instant::now();
    for name in names {
        tick.tick().await;
        let mut client = producer.clone();
        let plain = agent(&name, false);
        calls.push(tokio::spawn(async move {
            let sent = micros(base.elapsed());
            let ok = match trigger {
                Trigger::Signal => {
                    let request = pb::SignalRequest {
                        queue: queue.into(),
                        payload: name.clone().into_bytes(),
                        name,
                        event: "go".into(),
                        request_id: String::new(),
                    };
                    client.signal(request).await?.into_inner().delivered
                }
                Trigger::Register => {
                    let request =
                        pb::RegisterRequest { queue: queue.into(), agents: vec![plain], ..Default::default() };
                    client.register(request).await?.into_inner().created == 1
                }
            };
            Ok::<_, BoxError>((sent, ok))
        }));
    }
    let sent_all = started.elapsed();
    let mut sent_at = Vec::with_capacity(total);
    for call in calls {
        let (sent, ok) = call.await??;
        if !ok {
            wrong.fetch_add(1, Ordering::Relaxed);
        }
        sent_at.push(sent);
    }
    worker.await??;
    let after = sample(lab).await?;
    let mut to_lease = histogram();
    for (i, sent) in sent_at.iter().enumerate().skip(warmup) {
        to_lease.saturating_record(leased[i].load(Ordering::Relaxed).saturating_sub(*sent));
    }
    let wrong = wrong.load(Ordering::Relaxed);
    if wrong > 0 {
        return Err(format!(
            "durable {trigger:?}: {wrong} calls refused, or leases without their event (or with one), or twice"
        )
        .into());
    }
    Ok(TriggerRow {
        achieved: total as f64 / sent_all.as_secs_f64(),
        to_lease,
        commands_per: (after.commands - before.commands) as f64 / total as f64,
    })
}

/// Heartbeats of `leases` at `rate` (one lease each, taking turns), progress "<n>"; answers each
/// call's round trip (µs) and when it was sent (µs since `base`).
async fn heartbeats(
    client: &AgentServiceClient<tonic::transport::Channel>,
    leases: &[pb::Lease],
    rate: u32,
    count: usize,
    base: Instant,
) -> Result<Vec<(u64, u64)>> {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    let mut calls = Vec::with_capacity(count);
    for n in 0..count {
        tick.tick().await;
        let l = &leases[n % leases.len()];
        let mut client = client.clone();
        let request = pb::HeartbeatRequest {
            worker_id: "watch-worker".into(),
            leases: vec![pb::LeaseRef {
                queue: l.queue.clone(),
                name: l.name.clone(),
                token: l.token,
                progress: n.to_string(),
            }],
        };
        calls.push(tokio::spawn(async move {
            let sent = micros(base.elapsed());
            let answer = client.heartbeat(request).await?.into_inner();
            if answer.extended.len() != 1 {
                return Err::<_, BoxError>("a heartbeat lost its lease".into());
            }
            Ok((sent, micros(base.elapsed()) - sent))
        }));
    }
    let mut out = Vec::with_capacity(count);
    for call in calls {
        out.push(call.await??);
    }
    Ok(out)
}

/// Progress → stream: `agents` leases held; heartbeats at `rate` for `seconds` with nobody
/// watching (the commands' reference), then the same with one WatchAgent stream per agent.
async fn run_watch(lab: &mut Lab, baton: &Baton, args: &DurableArgs) -> Result<()> {
    let queue = "watch";
    let (rate, seconds, k) = (args.watch_rate, args.watch_seconds, args.watch_agents);
    let total = (u64::from(rate) * seconds) as usize;
    let warmup = rate as usize;
    let client = AgentServiceClient::new(baton.channel().await?);
    let agents =
        (0..k).map(|i| pb::Agent { name: format!("w-{i}"), timeout: dur(TIMEOUT_MS), ..Default::default() }).collect();
    client.clone().register(pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() }).await?;
    let leases = client
        .clone()
        .acquire(pb::AcquireRequest {
            queue: queue.into(),
            worker_id: "watch-worker".into(),
            max_leases: k,
            wait: None,
        })
        .await?
        .into_inner()
        .leases;
    if leases.len() != k as usize {
        return Err(format!("durable watch: {} of {k} leases granted", leases.len()).into());
    }
    let base = Instant::now();
    eprintln!("durable: watch: {total} heartbeats, nobody watching");
    let before = sample(lab).await?;
    heartbeats(&client, &leases, rate, total, base).await?;
    let unwatched = (sample(lab).await?.commands - before.commands) as f64 / total as f64;

    // One stream per agent, each open (its snapshot read) before the clock starts.
    let received: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let wrong = Arc::new(AtomicU64::new(0));
    let mut watchers = Vec::new();
    for l in &leases {
        let mut stream = client
            .clone()
            .watch_agent(pb::WatchAgentRequest {
                queue: queue.into(),
                name: l.name.clone(),
                after_token: 0,
                wait: dur(600_000),
            })
            .await?
            .into_inner();
        let first = stream.message().await?.ok_or("a watch stream ended at once")?;
        if first.update != pb::WatchUpdate::Snapshot as i32 || first.token != l.token {
            return Err(format!("durable watch: the first update of {} is not its snapshot: {first:?}", l.name).into());
        }
        let (received, wrong) = (received.clone(), wrong.clone());
        watchers.push(tokio::spawn(async move {
            while let Some(u) = stream.message().await? {
                if u.update == pb::WatchUpdate::Finished as i32 {
                    return Ok::<_, BoxError>(());
                }
                if u.update != pb::WatchUpdate::Progress as i32 {
                    continue;
                }
                let at = micros(base.elapsed());
                match u.progress.parse::<usize>().ok().and_then(|n| received.get(n)) {
                    Some(slot) if slot.swap(at, Ordering::Relaxed) == 0 => {}
                    _ => {
                        wrong.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Err("a watch stream ended before the finish".into())
        }));
    }
    eprintln!("durable: watch: {total} heartbeats, {k} streams watching");
    let before = sample(lab).await?;
    let sent = heartbeats(&client, &leases, rate, total, base).await?;
    let arrived = async {
        while received.iter().any(|r| r.load(Ordering::Relaxed) == 0) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), arrived).await.is_err() {
        let missing = received.iter().filter(|r| r.load(Ordering::Relaxed) == 0).count();
        return Err(format!("durable watch: {missing} of {total} progress updates never reached their stream").into());
    }
    let watched = (sample(lab).await?.commands - before.commands) as f64 / total as f64;
    let completions = leases
        .iter()
        .map(|l| pb::CompleteRequest {
            queue: l.queue.clone(),
            name: l.name.clone(),
            token: l.token,
            outcome: pb::Outcome::Success as i32,
            ..Default::default()
        })
        .collect();
    client.clone().complete_batch(pb::CompleteBatchRequest { completions }).await?;
    for w in watchers {
        tokio::time::timeout(Duration::from_secs(10), w).await.map_err(|_| "a watch stream saw no finish")???;
    }
    let (mut to_stream, mut round_trip) = (histogram(), histogram());
    for (n, (at, rtt)) in sent.iter().enumerate().skip(warmup) {
        to_stream.saturating_record(received[n].load(Ordering::Relaxed).saturating_sub(*at));
        round_trip.saturating_record(*rtt);
    }
    let p99_ms = to_stream.value_at_quantile(0.99) as f64 / 1000.0;
    println!();
    println!(
        "durable watch: {k} leases held, each followed by one WatchAgent stream; {total} heartbeats with progress at \
         {rate}/s, one lease each in turn, the first {warmup} warm-up"
    );
    println!("Heartbeat sent → progress at the streaming caller: {} ms (p50/p99/max)", p50_p99_max(&to_stream));
    println!("Heartbeat call round trip, same run (the floor):   {} ms (p50/p99/max)", p50_p99_max(&round_trip));
    println!(
        "p99 {p99_ms:.2} ms (target ≤ 10 ms: {}); Redis commands per heartbeat: {watched:.2} watched, {unwatched:.2} \
         unwatched",
        if p99_ms <= 10.0 { "met" } else { "NOT met" }
    );
    let wrong = wrong.load(Ordering::Relaxed);
    if wrong > 0 {
        return Err(format!("durable watch: {wrong} progress updates unknown or delivered twice").into());
    }
    Ok(())
}
