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
//! Every run must finish exactly once with every step recorded once; a chain's every agent must
//! run exactly once, after its parent.

use std::{collections::HashMap, time::Duration};

use baton::pb::{self, agent_service_client::AgentServiceClient};
use futures::{StreamExt, TryStreamExt};
use tokio::{sync::mpsc, time::Instant};

use super::measure::{noise_floor, slowlog_read, slowlog_start, slowlog_stop};
use crate::lab::{bench_config, dur, process_cpu_seconds, Baton, BoxError, Lab, Result};

const TIMEOUT_MS: u64 = 600_000;

pub struct DurableArgs {
    /// Runs (and chains) per row.
    pub runs: u32,
    /// Steps per run (and agents per chain).
    pub steps: u32,
    /// Runs in flight on the worker's Session stream (its credit).
    pub concurrency: u32,
    pub parts: Vec<Part>,
}

/// What the scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// A run of S steps against a chain of S one-shot agents, in Redis commands.
    Steps,
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
        return Err(format!("durable steps: {wrong} runs or chain steps did not finish exactly once as promised").into());
    }
    Ok(())
}
