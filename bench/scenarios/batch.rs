//! batch: what `limits.script_batch` buys, measured as Redis work per item against the size of a
//! script call, beside the machine's noise floor in the same run.
//!
//! For each size S (10 … 500), a Baton with `limits.script_batch` = S registers N one-shot
//! agents (Register of 1,000) and drains them (workers looping Acquire of 1,000 + CompleteBatch),
//! so every registerAgents, acquireAgents and completeAgents call carries up to S items. SLOWLOG
//! logs every command (threshold 0), so each script call's own Redis time is known: per script,
//! calls, µs per call (mean, p50, max) and µs per item (its total time over the N items), and
//! the work of a full call at that size (S × µs per item). Beside them, in the same Redis at the
//! same time, a bare INCR every millisecond: its worst time in SLOWLOG is the machine's floor (a
//! constant-time command logged at 4 ms was waiting for a CPU, not working). Sizes interleave
//! across rounds, so a machine that slows down mid-run slows all of them.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use baton::pb;
use tokio::sync::Notify;

use super::measure::{drain, slowlog_all};
use crate::lab::{agents, bench_config, Baton, Lab, Result};

pub struct BatchArgs {
    pub sizes: Vec<u32>,
    pub jobs: u64,
    pub workers: usize,
    pub rounds: u32,
}

/// The scripts whose items `script_batch` bounds on a one-shot's path.
const SCRIPTS: [&str; 3] = ["registerAgents", "acquireAgents", "completeAgents"];

/// The bound a full call's work is held to.
const WORK_BOUND_US: f64 = 5_000.0;

/// Every logged call of one script (µs each), over the rounds of one size.
#[derive(Default)]
struct Calls(Vec<i64>);

impl Calls {
    fn total(&self) -> i64 {
        self.0.iter().sum()
    }

    fn at(&mut self, q: f64) -> i64 {
        self.0.sort_unstable();
        crate::lab::quantile_ms(&self.0, q)
    }
}

/// One size's figures over all rounds.
#[derive(Default)]
struct Size {
    scripts: BTreeMap<&'static str, Calls>,
    floor: Calls,
    rates: Vec<f64>,
    items: u64,
}

async fn slowlog_config(lab: &mut Lab, threshold_us: &str, len: &str) -> Result<()> {
    for (k, v) in [("slowlog-max-len", len), ("slowlog-log-slower-than", threshold_us)] {
        redis::cmd("CONFIG").arg("SET").arg(k).arg(v).query_async::<()>(&mut lab.conn).await?;
    }
    redis::cmd("SLOWLOG").arg("RESET").query_async::<()>(&mut lab.conn).await?;
    Ok(())
}

/// One size, once: register, drain; jobs/s. SLOWLOG holds the calls afterwards.
async fn one(lab: &mut Lab, args: &BatchArgs, size: u32) -> Result<f64> {
    lab.flush().await?;
    let mut config = bench_config();
    config.limits.script_batch = size;
    let baton = Baton::start(&lab.url(), config).await?;
    let mut client = agents(baton.channel().await?);
    slowlog_config(lab, "0", "1000000").await?;
    // The floor: a bare INCR every millisecond on a connection of its own, for the whole step.
    let stop = Arc::new(Notify::new());
    let mut floor_conn = redis::Client::open(lab.url())?.get_multiplexed_async_connection().await?;
    let floor = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            loop {
                tokio::select! {
                    _ = stop.notified() => return Ok::<(), redis::RedisError>(()),
                    _ = tick.tick() => redis::cmd("INCR").arg("bench:floor").query_async::<()>(&mut floor_conn).await?,
                }
            }
        })
    };
    let mut registered = 0;
    while registered < args.jobs {
        let n = (args.jobs - registered).min(1_000);
        let batch = (registered..registered + n).map(|i| pb::Agent { name: format!("j{i}"), ..Default::default() });
        client
            .register(pb::RegisterRequest { queue: "batch".into(), agents: batch.collect(), ..Default::default() })
            .await?;
        registered += n;
    }
    let rate = drain(&baton, "batch", args.jobs, args.workers, 1_000).await;
    stop.notify_one();
    floor.await??;
    baton.stop().await?;
    rate
}

pub async fn run(lab: &mut Lab, args: &BatchArgs) -> Result<()> {
    let mut sizes: Vec<(u32, Size)> = args.sizes.iter().map(|&s| (s, Size::default())).collect();
    for round in 1..=args.rounds {
        for (size, figures) in &mut sizes {
            eprintln!("[batch] round {round}/{}: script_batch {size}", args.rounds);
            let rate = one(lab, args, *size).await?;
            figures.rates.push(rate);
            figures.items += args.jobs;
            for (name, us) in slowlog_all(lab).await? {
                if name == "incr" {
                    figures.floor.0.push(us);
                } else if let Some(&s) = SCRIPTS.iter().find(|&&s| s == name) {
                    figures.scripts.entry(s).or_default().0.push(us);
                }
            }
        }
    }
    slowlog_config(lab, "10000", "128").await?;

    println!();
    println!(
        "batch: {} one-shot agents per step, Register of 1,000, {} workers looping Acquire of 1,000 + CompleteBatch; \
         {} round(s), sizes interleaved; SLOWLOG logging every command",
        args.jobs, args.workers, args.rounds
    );
    println!(
        "{:>6} {:<15} {:>7} {:>9} {:>8} {:>8} {:>9} {:>13} {:>11} {:>12} {:>9}",
        "size",
        "script",
        "calls",
        "µs/call",
        "p50",
        "max",
        "µs/item",
        "size×µs/item",
        "INCR p99/max",
        "max÷INCR max",
        "jobs/s"
    );
    let mut chosen = None;
    for (size, figures) in &mut sizes {
        let rate = {
            let mut r = figures.rates.clone();
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        };
        let (floor_p99, floor_max) = (figures.floor.at(0.99), figures.floor.at(1.0));
        let mut within = true;
        for name in SCRIPTS {
            let Some(calls) = figures.scripts.get_mut(name) else { continue };
            let n = calls.0.len();
            let per_item = calls.total() as f64 / figures.items as f64;
            let full = per_item * f64::from(*size);
            within &= full <= WORK_BOUND_US;
            println!(
                "{:>6} {:<15} {:>7} {:>9.0} {:>8} {:>8} {:>9.2} {:>13.0} {:>11} {:>12.2} {:>9.0}",
                size,
                name,
                n,
                calls.total() as f64 / n.max(1) as f64,
                calls.at(0.5),
                calls.at(1.0),
                per_item,
                full,
                format!("{floor_p99}/{floor_max}"),
                calls.at(1.0) as f64 / floor_max.max(1) as f64,
                rate
            );
        }
        if within {
            chosen = Some(*size);
        }
    }
    let first = sizes.first().map(|(s, f)| (*s, f.rates.iter().sum::<f64>() / f.rates.len() as f64));
    if let Some((s0, r0)) = first {
        let ratios: Vec<String> = sizes
            .iter()
            .map(|(s, f)| format!("{s}: {:.2}", f.rates.iter().sum::<f64>() / f.rates.len() as f64 / r0))
            .collect();
        println!("jobs/s against size {s0} (mean of rounds): {}", ratios.join(", "));
    }
    match chosen {
        Some(s) => println!(
            "largest size whose full call (size × µs/item) stays within {:.0} ms of Redis work for every script: {s}",
            WORK_BOUND_US / 1_000.0
        ),
        None => println!("no size keeps a full call within {:.0} ms", WORK_BOUND_US / 1_000.0),
    }
    crate::lab::print_load();
    Ok(())
}
