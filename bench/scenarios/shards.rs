//! shards: what a grant costs as one queue is spread over more shards. One queue declared
//! `sharding.queues = "sweep=N"` for each N of `--shards-counts` (1, 2, 4, 8, 16, 32), on the
//! run's redis-server and on a Redis Cluster of three primaries: `--shards-jobs` one-shot
//! agents registered (each in shard CRC16(name) mod N), then drained by `--shards-sessions`
//! Session streams with credit `--shards-credit`, each completing every lease as soon as it
//! is pushed. Per N: drain jobs/s, Redis commands and script calls per grant (INFO
//! commandstats, commands inside scripts included), the scripts' Redis time per grant
//! (commandstats µs of EVALSHA) and Redis CPU per grant (INFO cpu, user + system, summed over
//! the primaries), each against N = 1 measured in the same run.

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use baton::pb;
use clap::ValueEnum;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{cluster::launcher, cycles::register, measure};
use crate::lab::{agents, bench_config, Baton, BoxError, Lab, RedisCounters, Result};

/// Where the sharded queue lives.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum On {
    /// The run's own redis-server (unix socket).
    Single,
    /// A Redis Cluster of three primaries (no replicas) on loopback TCP ports.
    Cluster,
}

pub struct ShardsArgs {
    pub counts: Vec<u32>,
    pub jobs: u64,
    pub sessions: usize,
    pub credit: u32,
    pub on: Vec<On>,
}

/// The queue every step drains.
const QUEUE: &str = "sweep";

/// One N's drain.
struct Row {
    n: u32,
    jobs_per_s: f64,
    commands: f64,
    scripts: f64,
    script_us: f64,
    cpu_us: f64,
}

pub async fn run(lab: &mut Lab, args: &ShardsArgs) -> Result<()> {
    for &on in &args.on {
        let (rows, floor) = match on {
            On::Single => {
                measure::slowlog_start(lab).await?;
                let mut rows = Vec::new();
                for &n in &args.counts {
                    eprintln!("[shards] one Redis, N = {n}");
                    lab.flush().await?;
                    let mut conns = vec![lab.conn.clone()];
                    rows.push(step(&lab.url(), &mut conns, n, args).await?);
                }
                let slow = measure::slowlog_read(lab).await?;
                measure::slowlog_stop(lab).await?;
                (rows, Some(measure::noise_floor(&slow)))
            }
            On::Cluster => {
                eprintln!("[shards] starting a Redis Cluster of 3 primaries on loopback");
                let cluster = launcher::TestCluster::start(3, 0).await;
                let mut conns = Vec::new();
                for node in &cluster.nodes {
                    conns.push(node.conn().await);
                }
                let mut rows = Vec::new();
                for &n in &args.counts {
                    eprintln!("[shards] cluster, N = {n}");
                    for conn in conns.iter_mut() {
                        redis::cmd("FLUSHALL").query_async::<()>(conn).await?;
                    }
                    rows.push(step(&cluster.url(), &mut conns, n, args).await?);
                }
                (rows, None)
            }
        };
        print(on, args, &rows, floor.as_deref());
    }
    Ok(())
}

/// One N: register, drain, and the counters of every primary around the drain.
async fn step(url: &str, nodes: &mut [redis::aio::MultiplexedConnection], n: u32, args: &ShardsArgs) -> Result<Row> {
    let mut config = bench_config();
    config.sharding.queues = format!("{QUEUE}={n}");
    let baton = Baton::start(url, config).await?;
    let client = agents(baton.channel().await?);
    register(&client, QUEUE, args.jobs, None).await?;
    let before = RedisCounters::read_all(nodes).await?;
    let started = Instant::now();
    let grants = drain(&baton, args).await?;
    let seconds = started.elapsed().as_secs_f64();
    let during = RedisCounters::read_all(nodes).await?.since(&before);
    baton.stop().await?;
    if grants != args.jobs {
        return Err(format!("shards: N = {n}: {grants} grants for {} one-shot agents", args.jobs).into());
    }
    let per = |x: f64| x / grants as f64;
    let (scripts, script_us) = during.scripts();
    Ok(Row {
        n,
        jobs_per_s: grants as f64 / seconds,
        commands: per(during.calls() as f64),
        scripts: per(scripts as f64),
        script_us: per(script_us as f64),
        cpu_us: per(during.cpu_s * 1e6),
    })
}

/// `sessions` Session streams, each opened with `credit` and completing every lease at once
/// (one message back per response, the completions and as much credit), until every job's
/// completion is answered. Returns the leases granted; a lease granted twice fails the run.
async fn drain(baton: &Baton, args: &ShardsArgs) -> Result<u64> {
    let channels = baton.channels(args.sessions).await?;
    let done = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let stop = CancellationToken::new();
    let (jobs, credit) = (args.jobs, args.credit);
    let sessions: Vec<_> = channels
        .into_iter()
        .enumerate()
        .map(|(i, channel)| {
            let (done, seen, stop) = (done.clone(), seen.clone(), stop.clone());
            tokio::spawn(async move {
                let mut client = agents(channel);
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                let open = pb::SessionOpen { queue: QUEUE.into(), worker_id: format!("sweep-{i}") };
                tx.send(pb::SessionRequest { open: Some(open), credit, ..Default::default() })?;
                let mut stream =
                    client.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
                let mut granted = 0u64;
                loop {
                    let r = tokio::select! {
                        _ = stop.cancelled() => break,
                        r = stream.message() => r?.ok_or("a session ended")?,
                    };
                    let answered = r.completed.iter().filter(|c| !c.lease_lost).count() as u64;
                    if answered > 0 && done.fetch_add(answered, Ordering::SeqCst) + answered >= jobs {
                        stop.cancel();
                    }
                    if r.leases.is_empty() {
                        continue;
                    }
                    granted += r.leases.len() as u64;
                    {
                        let mut seen = seen.lock().expect("not poisoned");
                        if let Some(l) = r.leases.iter().find(|l| !seen.insert(l.name.clone())) {
                            return Err(format!("{} granted twice", l.name).into());
                        }
                    }
                    let completions: Vec<_> = r
                        .leases
                        .iter()
                        .map(|l| pb::SessionCompletion {
                            name: l.name.clone(),
                            token: l.token,
                            outcome: pb::Outcome::Success as i32,
                            ..Default::default()
                        })
                        .collect();
                    let credit = completions.len() as u32;
                    tx.send(pb::SessionRequest { credit, completions, ..Default::default() })?;
                }
                Ok::<_, BoxError>(granted)
            })
        })
        .collect();
    let limit = Duration::from_secs(600);
    let all = tokio::time::timeout(limit, futures::future::join_all(sessions))
        .await
        .map_err(|_| format!("shards: the drain did not end within {limit:?}"))?;
    let mut granted = 0;
    for session in all {
        granted += session??;
    }
    Ok(granted)
}

fn print(on: On, args: &ShardsArgs, rows: &[Row], floor: Option<&str>) {
    let Some(first) = rows.iter().find(|r| r.n == 1).or(rows.first()) else { return };
    let deployment = match on {
        On::Single => "one redis-server (unix socket)",
        On::Cluster => "a Redis Cluster of 3 primaries (loopback TCP; counters summed over the primaries)",
    };
    println!();
    println!(
        "Shard sweep on {deployment}: one queue (sharding.queues = \"{QUEUE}=N\") of {} one-shot agents, drained by {} \
         Session stream(s) with credit {}",
        args.jobs, args.sessions, args.credit
    );
    println!(
        "{:>4} {:>9} {:>10} {:>14} {:>16} {:>14}   {:>24}",
        "N", "jobs/s", "cmd/grant", "scripts/grant", "script µs/grant", "CPU µs/grant", "vs N=1: jobs/s cmd CPU"
    );
    for r in rows {
        println!(
            "{:>4} {:>9.0} {:>10.2} {:>14.3} {:>16.1} {:>14.1}   {:>24}",
            r.n,
            r.jobs_per_s,
            r.commands,
            r.scripts,
            r.script_us,
            r.cpu_us,
            format!(
                "{:.2}× {:.2}× {:.2}×",
                r.jobs_per_s / first.jobs_per_s,
                r.commands / first.commands,
                r.cpu_us / first.cpu_us
            )
        );
    }
    if let Some(last) = rows.iter().max_by_key(|r| r.n).filter(|r| r.n > first.n) {
        println!(
            "cost per grant at N = {} against N = {}: commands {:.2}×, scripts {:.2}×, Redis CPU {:.2}× (target ≤ 1.2×)",
            last.n,
            first.n,
            last.commands / first.commands,
            last.scripts / first.scripts,
            last.cpu_us / first.cpu_us
        );
    }
    if let Some(floor) = floor {
        println!("{floor}");
    }
}
