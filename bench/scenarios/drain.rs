//! drain: Baton against BullMQ and asynq, draining the same work on the same redis-server in
//! the same run.
//!
//! Each system gets N one-shot no-op jobs, enqueued before the clock starts (Baton: Register in
//! batches of 1000; BullMQ: addBulk; asynq: Enqueue), then one worker process with concurrency
//! C drains them: Baton's is the Go worker helper written as clients/go/README.md shows
//! (`bench/drain/baton-go`), BullMQ's a Node `Worker` (`bench/drain/bullmq`), asynq's a Go
//! server (`bench/drain/asynq`). Rounds interleave the systems (baton, bullmq, asynq, baton,
//! …), with FLUSHALL between, so a machine that slows down mid-run slows all of them.
//! `baton-limited` is Baton again with a concurrency limit on the queue (AdminService.SetLimits)
//! equal to the worker's concurrency, so it never binds: every Acquire checks it and every lease
//! end looks for a blocked queue, and the ratio to `baton` is what flow control costs.
//! `baton-keyed` spreads the jobs over 100 keys (Agent.key) with a per-key concurrency limit
//! that never binds (the worker's concurrency): every grant goes through the keyed path
//! (promotion, round-robin across keys, per-key counts), and its ratio to `baton` is what keys
//! and fairness cost.
//!
//! Per system: jobs/s (median of the rounds, and their range), CPU per job of each process
//! over the drain only (/proc utime+stime: Baton's server runs inside this process; the
//! worker; redis-server), Redis commands per job (`INFO commandstats` calls, commands inside
//! scripts included), Redis memory per enqueued job (`used_memory` once enqueued, minus before:
//! each system's own minimal job — Baton an agent named `j<i>`, BullMQ `data: {i}` with
//! removeOnComplete, asynq an 8-byte payload), and every job run exactly once: duplicates and missing, counted by each
//! driver against the jobs it enqueued. A missing job anywhere, or a duplicate from Baton (no
//! failure is injected, so at-least-once has no excuse), fails the run.

use std::{path::Path, process::Stdio, time::Duration};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

use baton::pb::{self, admin_service_client::AdminServiceClient, agent_service_client::AgentServiceClient};

use super::scale::used_memory;
use crate::lab::{bench_config, process_cpu_seconds, Baton, Lab, Result};

pub struct DrainArgs {
    pub jobs: u64,
    pub concurrency: u32,
    pub rounds: u32,
    pub systems: Vec<String>,
}

/// One system's drain.
struct Drain {
    jobs_per_sec: f64,
    /// CPU µs per job: server (Baton only), worker, redis.
    server_us: f64,
    worker_us: f64,
    redis_us: f64,
    commands_per_job: f64,
    /// Redis memory per enqueued job (used_memory after enqueueing minus before).
    bytes_per_job: f64,
    duplicates: u64,
    missing: u64,
}

/// CPU seconds of the processes that matter, and Redis's command count, at one instant.
struct Sample {
    server: f64,
    worker: f64,
    redis: f64,
    commands: u64,
    used_memory: u64,
}

async fn sample(lab: &mut Lab, worker_pid: u32) -> Result<Sample> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    let commands = info
        .lines()
        .filter_map(|l| l.split_once("calls=").and_then(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok()))
        .sum();
    Ok(Sample {
        server: process_cpu_seconds("/proc/self/stat")?,
        worker: process_cpu_seconds(&format!("/proc/{worker_pid}/stat"))?,
        redis: process_cpu_seconds(&format!("/proc/{}/stat", lab.pid))?,
        commands,
        used_memory: used_memory(lab).await?,
    })
}

/// Builds the three drivers (outside any timing); returns the commands that run them.
async fn prepare(dir: &Path) -> Result<Vec<(String, Vec<String>)>> {
    let root = std::env::current_dir()?;
    let drain = root.join("bench/drain");
    let mut out = Vec::new();
    for (name, src) in [("baton", "baton-go"), ("asynq", "asynq")] {
        let bin = dir.join(format!("{name}-drain"));
        eprintln!("drain: building the {name} driver (go build)");
        let status = Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg(".")
            .current_dir(drain.join(src))
            .status()
            .await
            .map_err(|e| format!("go: {e} (install Go 1.26+)"))?;
        if !status.success() {
            return Err(format!("go build of bench/drain/{src} failed").into());
        }
        out.push((name.to_string(), vec![bin.display().to_string()]));
    }
    let bullmq = drain.join("bullmq");
    if !bullmq.join("node_modules/bullmq").exists() {
        eprintln!("drain: installing BullMQ (npm ci)");
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
    out.push(("bullmq".into(), vec!["node".into(), bullmq.join("drain.mjs").display().to_string()]));
    let baton = out.iter().find(|(n, _)| n == "baton").map(|(_, c)| c.clone()).ok_or("no baton driver")?;
    out.insert(1, ("baton-limited".into(), baton.clone()));
    out.insert(2, ("baton-keyed".into(), baton));
    Ok(out)
}

/// Runs one driver to the end; what it measured, with the CPU and commands of the drain.
async fn run_one(lab: &mut Lab, command: &[String], target: &str, args: &DrainArgs, keys: u32) -> Result<Drain> {
    let empty = used_memory(lab).await?;
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .env("BATON_DRAIN_KEYS", keys.to_string())
        .arg(target)
        .arg(args.jobs.to_string())
        .arg(args.concurrency.to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().ok_or("the driver exited at start")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut before = None;
    let limit = Duration::from_secs(600);
    loop {
        let line = tokio::time::timeout(limit, lines.next_line())
            .await
            .map_err(|_| format!("{} did not finish within {limit:?}", command.join(" ")))??
            .ok_or_else(|| format!("{} ended without a result", command.join(" ")))?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        match v["phase"].as_str() {
            Some("enqueued") => before = Some(sample(lab, pid).await?),
            Some("done") => {
                let after = sample(lab, pid).await?;
                let before = before.ok_or("done before enqueued")?;
                let jobs = v["jobs"].as_f64().unwrap_or(0.0).max(1.0);
                let per_job = |a: f64, b: f64| (a - b) * 1e6 / jobs;
                let result = Drain {
                    jobs_per_sec: jobs / v["seconds"].as_f64().ok_or("no seconds")?,
                    server_us: per_job(after.server, before.server),
                    worker_us: per_job(after.worker, before.worker),
                    redis_us: per_job(after.redis, before.redis),
                    commands_per_job: (after.commands - before.commands) as f64 / jobs,
                    bytes_per_job: before.used_memory.saturating_sub(empty) as f64 / jobs,
                    duplicates: v["duplicates"].as_u64().unwrap_or(0),
                    missing: v["missing"].as_u64().unwrap_or(u64::MAX),
                };
                let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
                return Ok(result);
            }
            _ => {}
        }
    }
}

pub async fn run(lab: &mut Lab, dir: &Path, args: &DrainArgs) -> Result<()> {
    let drivers = prepare(dir).await?;
    let socket = lab.redis.socket().display().to_string();
    let mut results: Vec<(String, Vec<Drain>)> = Vec::new();
    for round in 1..=args.rounds {
        for (name, command) in drivers.iter().filter(|(n, _)| args.systems.contains(n)) {
            lab.flush().await?;
            eprintln!("drain: round {round}/{}: {name}", args.rounds);
            let drain = if name.starts_with("baton") {
                let baton = Baton::start(&lab.url(), bench_config()).await?;
                let target = baton.addr.to_string();
                let channel = baton.channel().await?; // listening
                let limits = match name.as_str() {
                    "baton-limited" => Some(pb::QueueLimits { concurrency: args.concurrency, ..Default::default() }),
                    "baton-keyed" => Some(pb::QueueLimits { key_concurrency: args.concurrency, ..Default::default() }),
                    _ => None,
                };
                if limits.is_some() {
                    // SetLimits names a queue that exists: made known by one agent registered
                    // and unregistered again, so the driver finds it empty.
                    let mut agents = AgentServiceClient::new(channel.clone());
                    let agent = pb::Agent { name: "placeholder".into(), ..Default::default() };
                    agents
                        .register(pb::RegisterRequest {
                            queue: "drain".into(),
                            agents: vec![agent],
                            ..Default::default()
                        })
                        .await?;
                    agents
                        .unregister(pb::UnregisterRequest { queue: "drain".into(), names: vec!["placeholder".into()] })
                        .await?;
                    AdminServiceClient::new(channel)
                        .set_limits(pb::SetLimitsRequest { queue: "drain".into(), limits, create: false })
                        .await?;
                }
                let keys = if name == "baton-keyed" { 100 } else { 0 };
                let drain = run_one(lab, command, &target, args, keys).await;
                baton.stop().await?;
                drain?
            } else {
                run_one(lab, command, &socket, args, 0).await?
            };
            match results.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => v.push(drain),
                None => results.push((name.clone(), vec![drain])),
            }
        }
    }
    println!();
    println!(
        "drain: {} one-shot no-op jobs, concurrency {}, {} round(s) interleaved, one redis-server (unix socket)",
        args.jobs, args.concurrency, args.rounds
    );
    println!(
        "{:<13} {:>9} {:>17}  {:>14} {:>10} {:>9} {:>9}  {:>13} {:>10} {:>10} {:>8}",
        "system",
        "jobs/s",
        "(min–max)",
        "µs CPU/job: srv",
        "worker",
        "redis",
        "total",
        "redis cmd/job",
        "B/job",
        "duplicates",
        "missing"
    );
    let mut medians = Vec::new();
    let mut failed = Vec::new();
    for (name, drains) in &results {
        let mut rates: Vec<f64> = drains.iter().map(|d| d.jobs_per_sec).collect();
        rates.sort_by(f64::total_cmp);
        let mid = rates.len() / 2;
        let median = if rates.len() % 2 == 0 { (rates[mid - 1] + rates[mid]) / 2.0 } else { rates[mid] };
        medians.push((name.clone(), median));
        let mean = |f: fn(&Drain) -> f64| drains.iter().map(f).sum::<f64>() / drains.len() as f64;
        let is_baton = name.starts_with("baton");
        let server = if is_baton { format!("{:.0}", mean(|d| d.server_us)) } else { "-".into() };
        let total = mean(|d| d.worker_us + d.redis_us) + if is_baton { mean(|d| d.server_us) } else { 0.0 };
        let duplicates: u64 = drains.iter().map(|d| d.duplicates).sum();
        let missing: u64 = drains.iter().map(|d| d.missing).sum();
        println!(
            "{:<13} {:>9.0} {:>17}  {:>14} {:>10.0} {:>9.0} {:>9.0}  {:>13.2} {:>10.0} {:>10} {:>8}",
            name,
            median,
            format!("({:.0}–{:.0})", rates[0], rates[rates.len() - 1]),
            server,
            mean(|d| d.worker_us),
            mean(|d| d.redis_us),
            total,
            mean(|d| d.commands_per_job),
            mean(|d| d.bytes_per_job),
            duplicates,
            missing
        );
        if missing > 0 || (is_baton && duplicates > 0) {
            failed.push(format!("{name}: {missing} missing, {duplicates} duplicates"));
        }
    }
    let rate = |n: &str| medians.iter().find(|(m, _)| m == n).map(|(_, r)| *r);
    if let Some(baton) = rate("baton") {
        for other in ["bullmq", "asynq"] {
            if let Some(r) = rate(other) {
                println!("ratio baton/{other}: {:.2}×", baton / r);
            }
        }
        if let Some(limited) = rate("baton-limited") {
            println!("ratio baton-limited/baton: {:.2} (the cost of a queue concurrency limit)", limited / baton);
        }
        if let Some(keyed) = rate("baton-keyed") {
            println!(
                "ratio baton-keyed/baton: {:.2} (the cost of 100 keys with a per-key concurrency limit)",
                keyed / baton
            );
        }
    }
    crate::lab::print_load();
    if !failed.is_empty() {
        return Err(format!("drain: jobs lost or repeated: {}", failed.join("; ")).into());
    }
    Ok(())
}
