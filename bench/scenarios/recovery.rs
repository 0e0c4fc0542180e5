//! recovery: how long the leases of a killed worker stay stranded.
//!
//! A Baton on the default sweep settings (or those given: `orphan_cleanup.threshold_ms`,
//! `interval_ms`, `leadership_ttl_ms`) serves a queue of N agents. The example worker process
//! (`baton-worker`) acquires all N with long work and heartbeats well within the threshold.
//! A rescuer in this process waits in Acquire(wait=30 s, max_leases=N). The worker is killed
//! with SIGKILL; the figure is the time from the kill until the rescuer holds all N again.
//!
//! Expected: the sweeper declares the worker dead `threshold` after its last sign of life
//! (Acquire or Heartbeat), at its next pass (every `interval`), and the reap wakes the
//! rescuer. So from the last heartbeat: between threshold and threshold + interval, plus a
//! dispatch; from the kill, up to one heartbeat period less.

use std::{process::Stdio, time::Duration};

use baton::{pb, store::Keys};
use tokio::time::Instant;

use super::cycles::register;
use crate::lab::{bench_config, dur, quantile_ms, ts_ms, Baton, Lab, Result, LEASE_TIMEOUT_MS};

pub struct RecoveryArgs {
    pub leases: u32,
    pub rounds: usize,
    pub threshold_ms: u64,
    pub interval_ms: u64,
    pub leadership_ttl_ms: u64,
    pub heartbeat_ms: u64,
}

struct Round {
    /// Kill → first lease back, kill → all N back (client clock, ms).
    first_ms: f64,
    all_ms: f64,
    /// Worker's last sign of life → the last lease re-acquired (Redis clock, ms).
    silent_to_all_ms: i64,
}

pub async fn run(lab: &mut Lab, args: &RecoveryArgs) -> Result<()> {
    let worker_bin = crate::lab::sibling_bin("baton-worker")?;
    if args.heartbeat_ms >= args.threshold_ms {
        return Err("--recovery-heartbeat-ms must be below the orphan threshold, or the live worker is reaped".into());
    }
    lab.flush().await?;
    let mut config = bench_config();
    config.orphan_cleanup.threshold_ms = args.threshold_ms;
    config.orphan_cleanup.interval_ms = args.interval_ms;
    config.orphan_cleanup.leadership_ttl_ms = args.leadership_ttl_ms;
    let baton = Baton::start(&lab.url(), config).await?;
    let channel = baton.channel().await?;
    // The sweeper holds its election, and its start-up grace (one threshold, in which it
    // declares nobody dead: workers could not reach a Baton that was not running) is over.
    let started = Instant::now();
    let mut leaders = baton::pb::leader_service_client::LeaderServiceClient::new(channel.clone());
    while leaders
        .get_leader(pb::GetLeaderRequest { election: "baton-sweeper".into() })
        .await?
        .into_inner()
        .leader_id
        .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(args.threshold_ms).saturating_sub(started.elapsed())).await;

    let mut rounds = Vec::new();
    for round in 0..args.rounds {
        eprintln!("[recovery] round {}: baton-worker holds {} leases, SIGKILL", round + 1, args.leases);
        rounds.push(one(lab, &baton, &channel, &worker_bin, args, round).await?);
    }
    baton.stop().await?;

    println!();
    println!(
        "Recovery of a killed worker's leases: baton-worker holds N={} (work 10 min, heartbeat every {} ms), SIGKILL; a rescuer \
         waits in Acquire(wait=30s, max_leases=N); orphan threshold {} ms, sweep interval {} ms, sweeper ttl {} ms",
        args.leases, args.heartbeat_ms, args.threshold_ms, args.interval_ms, args.leadership_ttl_ms
    );
    println!("{:>5} {:>16} {:>16} {:>26}", "round", "kill→first (ms)", "kill→all N (ms)", "last heartbeat→all N (ms)");
    for (i, r) in rounds.iter().enumerate() {
        println!("{:>5} {:>16.0} {:>16.0} {:>26}", i + 1, r.first_ms, r.all_ms, r.silent_to_all_ms);
    }
    let mut all: Vec<i64> = rounds.iter().map(|r| r.all_ms.round() as i64).collect();
    all.sort_unstable();
    let mut silent: Vec<i64> = rounds.iter().map(|r| r.silent_to_all_ms).collect();
    silent.sort_unstable();
    println!("{:>5} {:>16} {:>16} {:>26}", "p50", "", quantile_ms(&all, 0.5), quantile_ms(&silent, 0.5));
    println!(
        "expected: last heartbeat→all N in [threshold, threshold + interval] = [{}, {}] ms plus one dispatch; kill→all N up to \
         one heartbeat period ({} ms) less",
        args.threshold_ms,
        args.threshold_ms + args.interval_ms,
        args.heartbeat_ms
    );
    println!("kill→…: tokio Instants in this process, from just before SIGKILL to the rescuer's Acquire replies.");
    println!("last heartbeat→all N: Redis clock, the worker's last-seen score (read after the kill) to the latest");
    println!("  acquired_at (lease deadline − timeout) among the N re-acquired leases.");
    crate::lab::print_load();
    Ok(())
}

async fn one(
    lab: &mut Lab,
    baton: &Baton,
    channel: &tonic::transport::Channel,
    worker_bin: &std::path::Path,
    args: &RecoveryArgs,
    round: usize,
) -> Result<Round> {
    let queue = format!("recovery-{round}");
    let victim = format!("victim-{round}");
    let n = u64::from(args.leases);
    let keys = Keys::new(baton::config::Config::default().key_prefix).queue(&queue);
    let mut client = crate::lab::agents(channel.clone());
    // An hour's interval: once completed at the end of the round, the agents stay out of the way.
    register(&client, &queue, n, Some(3_600_000)).await?;

    let mut worker = tokio::process::Command::new(worker_bin)
        .args(["--addr", &format!("http://{}", baton.addr), "--queue", &queue, "--worker-id", &victim])
        .args(["--max-leases", &args.leases.to_string(), "--work-ms", "600000"])
        .args(["--heartbeat-ms", &args.heartbeat_ms.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let started = Instant::now();
    loop {
        let held: u64 = redis::cmd("ZCARD").arg(&keys.working).query_async(&mut lab.conn).await?;
        if held == n {
            break;
        }
        if started.elapsed() > Duration::from_secs(15) {
            return Err(format!("recovery: baton-worker holds {held} of {n} leases after 15 s").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A few heartbeats: the worker is in its steady state when it dies.
    tokio::time::sleep(Duration::from_millis(2 * args.heartbeat_ms)).await;

    let rescuer = {
        let (mut client, queue) = (client.clone(), queue.clone());
        let worker_id = format!("rescuer-{round}");
        tokio::spawn(async move {
            let mut leases: Vec<pb::Lease> = Vec::new();
            let mut first: Option<Instant> = None;
            while (leases.len() as u64) < n {
                let request = pb::AcquireRequest {
                    queue: queue.clone(),
                    worker_id: worker_id.clone(),
                    max_leases: (n - leases.len() as u64) as u32,
                    wait: dur(30_000),
                };
                let got = client.acquire(request).await?.into_inner().leases;
                if !got.is_empty() {
                    first.get_or_insert_with(Instant::now);
                }
                leases.extend(got);
            }
            Ok::<_, crate::lab::BoxError>((first, Instant::now(), leases))
        })
    };
    // The rescuer's first acquire found nothing and it sleeps on the queue's wake-up.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let killed = Instant::now();
    worker.start_kill()?;
    worker.wait().await?;
    let last_seen: Option<i64> =
        redis::cmd("ZSCORE").arg(&keys.workers).arg(&victim).query_async(&mut lab.conn).await?;
    let last_seen = last_seen.ok_or("recovery: the worker was never seen alive")?;
    let limit = Duration::from_millis(args.threshold_ms + args.interval_ms) + Duration::from_secs(15);
    let (first, all, leases) = tokio::time::timeout(limit, rescuer)
        .await
        .map_err(|_| format!("recovery: the leases were not back within {} ms of the kill", limit.as_millis()))???;
    let mut latest = i64::MIN;
    for lease in &leases {
        latest = latest.max(ts_ms(&lease.deadline)? - LEASE_TIMEOUT_MS as i64);
    }
    // Out of the way for the next round: the agents run again in an hour.
    for lease in leases {
        let request = pb::CompleteRequest {
            queue: lease.queue,
            name: lease.name,
            token: lease.token,
            outcome: pb::Outcome::Success as i32,
            ..Default::default()
        };
        client.complete(request).await?;
    }
    let ms = |t: Instant| (t - killed).as_secs_f64() * 1000.0;
    Ok(Round { first_ms: ms(first.unwrap_or(all)), all_ms: ms(all), silent_to_all_ms: latest - last_seen })
}
