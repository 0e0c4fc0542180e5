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

use super::measure::{
    noise_floor, slow_merge, slowlog_read, slowlog_reset, slowlog_start, slowlog_stop, used_memory, Slow,
};
use crate::lab::{bench_config, process_cpu_seconds, Baton, Lab, RedisCounters, Result};

pub struct DrainArgs {
    pub jobs: u64,
    pub concurrency: u32,
    pub rounds: u32,
    pub systems: Vec<String>,
    /// Calls of each redis-benchmark run of the limit.
    pub limit_calls: u64,
}

/// One system's drain.
struct Drain {
    jobs_per_sec: f64,
    /// CPU µs per job: server (Baton only), worker, redis.
    server_us: f64,
    worker_us: f64,
    redis_us: f64,
    commands_per_job: f64,
    /// Script calls (FCALL) per job, and their Redis time (commandstats µs) per job.
    scripts_per_job: f64,
    script_us_per_job: f64,
    /// Redis memory per enqueued job (used_memory after enqueueing minus before).
    bytes_per_job: f64,
    /// A job's whole life, enqueue and drain: Redis commands and Redis CPU µs per job.
    life_commands_per_job: f64,
    life_redis_us: f64,
    duplicates: u64,
    missing: u64,
}

/// CPU seconds of the processes that matter, and Redis's command count, at one instant.
struct Sample {
    server: f64,
    worker: f64,
    redis: f64,
    counters: RedisCounters,
    used_memory: u64,
}

async fn sample(lab: &mut Lab, worker_pid: u32) -> Result<Sample> {
    Ok(Sample {
        server: process_cpu_seconds("/proc/self/stat")?,
        worker: process_cpu_seconds(&format!("/proc/{worker_pid}/stat"))?,
        redis: process_cpu_seconds(&format!("/proc/{}/stat", lab.pid))?,
        counters: RedisCounters::read(&mut lab.conn).await?,
        used_memory: used_memory(lab).await?,
    })
}

/// The script of the limit: one `redis.call`, nothing else.
const TRIVIAL_SCRIPT: &str = "return redis.call('INCR', KEYS[1])";

/// One round of the limit: redis-benchmark on the run's redis-server, a trivial EVALSHA then a
/// bare INCR, `calls` each over `k` connections.
struct Limit {
    /// Trivial EVALSHA: calls/s, Redis CPU µs per call (/proc), the script's commandstats µs
    /// per call, and its one `redis.call('INCR')`'s commandstats µs.
    script_per_s: f64,
    script_cpu_us: f64,
    script_us: f64,
    call_us: f64,
    /// Bare INCR: calls/s, Redis CPU µs per call, commandstats µs per call.
    incr_per_s: f64,
    incr_cpu_us: f64,
    incr_us: f64,
}

async fn limit(lab: &mut Lab, k: usize, calls: u64) -> Result<Limit> {
    lab.flush().await?;
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(TRIVIAL_SCRIPT).query_async(&mut lab.conn).await?;
    let key = "bench:limit";
    let (script_per_s, script_cpu_us, script) =
        limit_one(lab, k, calls, vec!["EVALSHA".into(), sha, "1".into(), key.into()]).await?;
    let (incr_per_s, incr_cpu_us, incr) = limit_one(lab, k, calls, vec!["INCR".into(), key.into()]).await?;
    // redis-benchmark counts error replies as requests: the counter proves both ran.
    let counted: u64 = redis::cmd("GET").arg(key).query_async(&mut lab.conn).await?;
    if counted != 2 * calls {
        return Err(format!("the limit's {} calls counted {counted}", 2 * calls).into());
    }
    let per_call = |(n, us): (u64, u64)| us as f64 / n.max(1) as f64;
    Ok(Limit {
        script_per_s,
        script_cpu_us,
        script_us: per_call(script.of("evalsha")),
        call_us: per_call(script.of("incr")),
        incr_per_s,
        incr_cpu_us,
        incr_us: per_call(incr.of("incr")),
    })
}

/// `calls` of `command` by redis-benchmark: calls/s, Redis CPU µs per call (/proc), and the
/// counters' change over the run.
async fn limit_one(lab: &mut Lab, k: usize, calls: u64, command: Vec<String>) -> Result<(f64, f64, RedisCounters)> {
    let stat = format!("/proc/{}/stat", lab.pid);
    let (before, cpu) = (RedisCounters::read(&mut lab.conn).await?, process_cpu_seconds(&stat)?);
    let b = lab.redis_benchmark_command(k, calls, &command).await?;
    let cpu_us = (process_cpu_seconds(&stat)? - cpu) * 1e6 / calls as f64;
    Ok((b.rps, cpu_us, RedisCounters::read(&mut lab.conn).await?.since(&before)))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.is_empty() {
        0.0
    } else if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
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
    // Before the driver starts: its enqueue counts in a job's whole life.
    let (born_redis, born_counters) =
        (process_cpu_seconds(&format!("/proc/{}/stat", lab.pid))?, RedisCounters::read(&mut lab.conn).await?);
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
                    commands_per_job: after.counters.since(&before.counters).calls() as f64 / jobs,
                    scripts_per_job: after.counters.since(&before.counters).scripts().0 as f64 / jobs,
                    script_us_per_job: after.counters.since(&before.counters).scripts().1 as f64 / jobs,
                    bytes_per_job: before.used_memory.saturating_sub(empty) as f64 / jobs,
                    life_commands_per_job: after.counters.since(&born_counters).calls() as f64 / jobs,
                    life_redis_us: per_job(after.redis, born_redis),
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
    let mut limits = Vec::new();
    // Every call above 1 ms, read and emptied after each drain.
    let mut slow = Slow::new();
    slowlog_start(lab).await?;
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
                        .unregister(pb::UnregisterRequest {
                            queue: "drain".into(),
                            names: vec!["placeholder".into()],
                            ..Default::default()
                        })
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
            slow_merge(&mut slow, slowlog_read(lab).await?);
            slowlog_reset(lab).await?;
        }
        eprintln!("drain: round {round}/{}: limit (redis-benchmark)", args.rounds);
        limits.push(limit(lab, args.concurrency as usize, args.limit_calls).await?);
        let mut part = slowlog_read(lab).await?;
        let trivial = format!("script {}", redis::Script::new(TRIVIAL_SCRIPT).get_hash());
        if let Some(e) = part.remove(&trivial) {
            part.insert("trivial EVALSHA".into(), e);
        }
        slow_merge(&mut slow, part);
        slowlog_reset(lab).await?;
    }
    slowlog_stop(lab).await?;
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
    println!();
    println!(
        "A job's whole life (enqueue, then drain), per job: Redis commands (inside scripts included) and Redis CPU"
    );
    println!("{:<13} {:>13} {:>14}", "system", "redis cmd/job", "redis µs/job");
    for (name, drains) in &results {
        let mean = |f: fn(&Drain) -> f64| drains.iter().map(f).sum::<f64>() / drains.len() as f64;
        println!("{:<13} {:>13.2} {:>14.1}", name, mean(|d| d.life_commands_per_job), mean(|d| d.life_redis_us));
    }
    print_limit(args, &limits, &results);
    println!("{}", noise_floor(&slow));
    crate::lab::print_load();
    if !failed.is_empty() {
        return Err(format!("drain: jobs lost or repeated: {}", failed.join("; ")).into());
    }
    Ok(())
}

/// The limit: what the trivial EVALSHA and INCR reached, and each system against them.
fn print_limit(args: &DrainArgs, limits: &[Limit], results: &[(String, Vec<Drain>)]) {
    let m = |f: fn(&Limit) -> f64| median(limits.iter().map(f).collect());
    let (script_per_s, script_cpu_us, call_us) = (m(|l| l.script_per_s), m(|l| l.script_cpu_us), m(|l| l.call_us));
    println!();
    println!(
        "limit: redis-benchmark -c {} -n {} on the same redis-server, once per round (median of {})",
        args.concurrency,
        args.limit_calls,
        limits.len()
    );
    println!("{:<46} {:>10} {:>18} {:>22}", "reference", "calls/s", "Redis CPU µs/call", "commandstats µs/call");
    println!(
        "{:<46} {:>10.0} {:>18.2} {:>22}",
        format!("EVALSHA \"{TRIVIAL_SCRIPT}\""),
        script_per_s,
        script_cpu_us,
        format!("{:.2} (redis.call {:.2})", m(|l| l.script_us), call_us)
    );
    println!("{:<46} {:>10.0} {:>18.2} {:>22.2}", "INCR", m(|l| l.incr_per_s), m(|l| l.incr_cpu_us), m(|l| l.incr_us));
    println!(
        "{:<13} {:>12} {:>15} {:>9} {:>11}  {:>17} {:>14} {:>15} {:>16}",
        "system",
        "scripts/job",
        "ceiling jobs/s",
        "jobs/s",
        "of ceiling",
        "redis CPU µs/job",
        "÷ EVALSHA CPU",
        "÷ redis.call µs",
        "script µs/job"
    );
    for (name, drains) in results {
        let mean = |f: fn(&Drain) -> f64| drains.iter().map(f).sum::<f64>() / drains.len() as f64;
        let jobs_per_s = median(drains.iter().map(|d| d.jobs_per_sec).collect());
        let scripts = mean(|d| d.scripts_per_job);
        let ceiling = if scripts > 0.0 { script_per_s / scripts } else { f64::INFINITY };
        let redis_us = mean(|d| d.redis_us);
        println!(
            "{:<13} {:>12.3} {:>15.0} {:>9.0} {:>10.1}%  {:>17.1} {:>13.1}× {:>14.0}× {:>16.1}",
            name,
            scripts,
            ceiling,
            jobs_per_s,
            100.0 * jobs_per_s / ceiling,
            redis_us,
            redis_us / script_cpu_us.max(1e-9),
            redis_us / call_us.max(1e-9),
            mean(|d| d.script_us_per_job)
        );
    }
}
