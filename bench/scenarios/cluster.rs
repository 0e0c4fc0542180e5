//! cluster: the cycles of one hot queue on Redis Cluster against one Redis node, in the same
//! run; then the same queue declared with three shards (`sharding.queues`), the same work
//! spread over three queues on three shards, and the price of
//! `redis.min_replicas_ack = 1` (WAIT for one replica after every change).
//!
//! The cluster is real: three primaries with a replica each, made by `redis-cli --cluster
//! create` on loopback ports (the tests' launcher, `tests/it/common/cluster.rs`). Every figure is
//! full cycles (Acquire N=1, then Complete SUCCESS) by K workers, one connection each, on
//! agents with a 1 ms interval.

use std::time::Duration;

use super::cycles::{cycle_phase, register};
#[allow(dead_code)]
#[path = "../../tests/it/common/cluster.rs"]
pub(super) mod launcher;
use crate::lab::{bench_config, ms_at, Baton, Lab, Result};

pub struct ClusterArgs {
    pub workers: usize,
    pub seconds: u64,
    pub agents: u64,
}

/// Queue names whose hash tags land on three different primaries of `cluster`.
async fn spread_queues(cluster: &launcher::TestCluster) -> Vec<String> {
    let mut chosen: Vec<(usize, String)> = Vec::new();
    for i in 0.. {
        let name = format!("spread-{i}");
        let primary = cluster.primary_of(&format!("baton:{{q:{name}}}:defs")).await;
        if chosen.iter().all(|(p, _)| *p != primary) {
            chosen.push((primary, name));
        }
        if chosen.len() == 3 {
            break;
        }
    }
    chosen.into_iter().map(|(_, name)| name).collect()
}

/// Cycles/s and Acquire p50/p99 (ms) of K workers spread round-robin over `queues`.
async fn measure(
    url: &str,
    ack: u32,
    sharding: &str,
    queues: &[String],
    args: &ClusterArgs,
    pid: u32,
) -> Result<(f64, f64, f64)> {
    let mut config = bench_config();
    config.redis.min_replicas_ack = ack;
    config.sharding.queues = sharding.to_string();
    let baton = Baton::start(url, config).await?;
    let channels = baton.channels(args.workers).await?;
    let clients: Vec<_> = channels.into_iter().map(crate::lab::agents).collect();
    for queue in queues {
        register(&clients[0], queue, args.agents / queues.len() as u64, Some(1)).await?;
    }
    // One phase per queue, its share of the workers, all at once.
    let per = clients.len() / queues.len();
    let phases = queues.iter().enumerate().map(|(i, queue)| {
        let share = &clients[i * per..(i + 1) * per];
        cycle_phase(share, queue, 1, Duration::from_secs(args.seconds), pid)
    });
    let results = futures::future::try_join_all(phases).await?;
    baton.stop().await?;
    let per_sec = results.iter().map(|c| c.per_sec).sum();
    let mut acquire = crate::lab::histogram();
    for r in &results {
        acquire.add(&r.acquire)?;
    }
    Ok((per_sec, ms_at(&acquire, 0.5), ms_at(&acquire, 0.99)))
}

pub async fn run(lab: &mut Lab, args: &ClusterArgs) -> Result<()> {
    eprintln!("[cluster] starting a 3-primary, 3-replica Redis Cluster on loopback");
    let cluster = launcher::TestCluster::start(3, 1).await;
    let hot = vec!["hot".to_string()];
    let spread = spread_queues(&cluster).await;
    let mut rows = Vec::new();
    eprintln!("[cluster] one node: one hot queue, K={}", args.workers);
    lab.flush().await?;
    let single = measure(&lab.url(), 0, "", &hot, args, lab.pid).await?;
    rows.push(("one node, one queue", single));
    let cases = [
        ("cluster, one queue (one shard)", 0, "", hot),
        ("cluster, one queue in three shards", 0, "hot3=3", vec!["hot3".to_string()]),
        ("cluster, three queues on three shards", 0, "", spread),
        ("cluster, one queue, min_replicas_ack = 1", 1, "", vec!["hot-wait".to_string()]),
    ];
    for (name, ack, sharding, queues) in cases {
        eprintln!("[cluster] {name}");
        rows.push((name, measure(&cluster.url(), ack, sharding, &queues, args, lab.pid).await?));
    }

    println!();
    println!(
        "Cluster: K={} workers, Acquire(N=1)+Complete cycles, {} s each; cluster = 3 primaries + 3 replicas on this machine",
        args.workers, args.seconds
    );
    println!("{:<44} {:>12} {:>12} {:>12} {:>10}", "deployment", "cycles/s", "acq p50 ms", "acq p99 ms", "÷ one node");
    for (name, (per_sec, p50, p99)) in &rows {
        println!("{name:<44} {per_sec:>12.0} {p50:>12.2} {p99:>12.2} {:>9.0}%", 100.0 * per_sec / single.0);
    }
    Ok(())
}
