//! idle: what an idle Baton costs Redis on its default settings, against the settings it
//! shipped with before (sweeps every 5 minutes, health every 5 s), measured in the same run.
//!
//! The price of recovering a dead worker's leases within 15 s is that the sweeps look every few
//! seconds. For each queue count in `--idle-queues`, a Baton on each configuration serves that
//! many registered queues (one agent each, due in an hour) and one pool, with one long poll
//! waiting on an empty queue; after the sweeper holds its election and ran its first pass,
//! Redis's own command counters (INFO commandstats, which count the commands scripts run too)
//! are read over `--idle-seconds`.

use std::time::Duration;

use baton::{
    config::Config,
    pb::{self, leader_service_client::LeaderServiceClient},
};
use tokio::time::Instant;

use super::cycles::register;
use crate::lab::{bench_config, dur, Baton, Lab, Result};

pub struct IdleArgs {
    pub queues: Vec<usize>,
    pub seconds: u64,
}

/// The sweep and probe settings of earlier releases: the reference.
pub fn previous_defaults(mut config: Config) -> Config {
    config.orphan_cleanup.threshold_ms = 600_000;
    config.orphan_cleanup.interval_ms = 300_000;
    config.orphan_cleanup.leadership_ttl_ms = 120_000;
    config.zombie_cleanup.threshold_ms = 30_000;
    config.zombie_cleanup.interval_ms = 300_000;
    config.health.probe_interval_ms = 5_000;
    config.circuit_breaker.cooldown_ms = 30_000;
    // Earlier releases had no probe: an open breaker waited out its cooldown.
    config.circuit_breaker.probe_interval_ms = 3_600_000;
    config
}

pub async fn run(lab: &mut Lab, args: &IdleArgs) -> Result<()> {
    let mut rows = Vec::new();
    for &queues in &args.queues {
        for (label, config) in [("defaults", bench_config()), ("previous", previous_defaults(bench_config()))] {
            eprintln!("[idle] {queues} queues, {label} settings: {} s", args.seconds);
            let (per_s, scripts_per_s) = one(lab, config, queues, args.seconds).await?;
            rows.push((queues, label, per_s, scripts_per_s));
        }
    }
    println!();
    println!(
        "Idle cost: Redis commands per second (INFO commandstats, less INFO itself) over {} s, N registered queues with one \
         agent each, one pool, one long poll waiting; the sweeper elected",
        args.seconds
    );
    println!("{:>8} {:>10} {:>12} {:>12} {:>16}", "queues", "settings", "commands/s", "scripts/s", "per queue/s");
    for (queues, label, per_s, scripts) in &rows {
        let per_queue = if *queues == 0 { "-".to_string() } else { format!("{:.2}", per_s / *queues as f64) };
        println!("{queues:>8} {label:>10} {per_s:>12.2} {scripts:>12.2} {per_queue:>16}");
    }
    let d = Config::default();
    println!(
        "defaults: orphan sweep every {} ms (threshold {} ms), zombie sweep every {} ms, health ping every {} ms, sweeper \
         renewal every {} ms; previous: every 300 s, 300 s, 5 s, 40 s",
        d.orphan_cleanup.interval_ms,
        d.orphan_cleanup.threshold_ms,
        d.zombie_cleanup.interval_ms,
        d.health.probe_interval_ms,
        d.orphan_cleanup.leadership_ttl_ms / 3
    );
    crate::lab::print_load();
    Ok(())
}

/// (commands/s, EVALSHA/s) of one idle Baton.
async fn one(lab: &mut Lab, config: Config, queues: usize, seconds: u64) -> Result<(f64, f64)> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), config.clone()).await?;
    let channel = baton.channel().await?;
    let client = crate::lab::agents(channel.clone());
    for q in 0..queues {
        register(&client, &format!("idle-{q}"), 1, Some(3_600_000)).await?;
    }
    let offer = pb::OfferRequest {
        request_id: String::new(),
        pool: "idle".into(),
        resources: vec![pb::Resource { id: "r".into(), ..Default::default() }],
    };
    baton::pb::claim_service_client::ClaimServiceClient::new(channel.clone()).offer(offer).await?;
    let mut poller = client.clone();
    let poll = tokio::spawn(async move {
        let req =
            pb::AcquireRequest { queue: "empty".into(), worker_id: "idle".into(), max_leases: 1, wait: dur(300_000) };
        poller.acquire(req).await
    });
    // The sweeper's election is won (its campaign is part of start-up, not of idling).
    let mut leaders = LeaderServiceClient::new(channel.clone());
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let leader = leaders.get_leader(pb::GetLeaderRequest { election: "baton-sweeper".into() }).await?;
        if !leader.into_inner().leader_id.is_empty() {
            break;
        }
        if Instant::now() > until {
            return Err("idle: the sweeper was not elected within 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Steady state: after the first orphan pass, which also runs the repairs (then every
    // `orphan_cleanup.repair_interval_ms`, 60 s by default: 3 scripts per queue).
    let sweeps = baton::store::Keys::new("").sweeps();
    let first_pass_soon = config.orphan_cleanup.interval_ms <= 10_000;
    if first_pass_soon {
        loop {
            let passes: std::collections::HashMap<String, u64> =
                redis::cmd("HGETALL").arg(&sweeps).query_async(&mut lab.conn).await?;
            if passes.keys().any(|k| k.starts_with("orphan:")) {
                break;
            }
            if Instant::now() > until {
                return Err("idle: no orphan pass within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let before = commands(lab).await?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after = commands(lab).await?;
    let elapsed = started.elapsed().as_secs_f64();
    poll.abort();
    baton.stop().await?;
    Ok(((after.0 - before.0) as f64 / elapsed, (after.1 - before.1) as f64 / elapsed))
}

/// (all commands but INFO, script calls: FCALL and EVALSHA) Redis has run so far.
async fn commands(lab: &mut Lab) -> Result<(u64, u64)> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    let calls = |line: &str| -> u64 {
        line.split("calls=").nth(1).and_then(|s| s.split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let mut all = 0;
    let mut scripts = 0;
    for line in info.lines().filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:")) {
        all += calls(line);
        if line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_fcall:") {
            scripts += calls(line);
        }
    }
    Ok((all, scripts))
}
