//! claims: ClaimService throughput and latency, and the hand-over of an Offer to a waiting
//! claim.
//!
//! - Claim+Return: K claimers (one connection each) loop Claim (no wait), then
//!   Return(reuse=true), on a pool with 2K idle resources, so a claim never finds the pool
//!   empty. 1 s warm-up, then `--claim-seconds`.
//! - Claim only: K claimers share C Claims on a pool of exactly C idle resources, against the
//!   reference: redis-benchmark with K connections running Baton's own claimResource script
//!   by FCALL C times on an equal pool, same KEYS and ARGV as Baton passes.
//! - Offer → waiting claim: W claimers wait in the pool's line (Claim, wait=30 s); a driver
//!   Offers one resource at a time and waits until a claimer has it. Latency = claimer's
//!   receipt − Offer sent, both tokio Instants in this one process (driver, claimers and Baton
//!   share it), so no clock translation is involved.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::{
    config::Config,
    pb::{self, claim_service_client::ClaimServiceClient},
    store::Keys,
};
use hdrhistogram::Histogram;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use crate::lab::{
    bench_config, dur, histogram, micros, ms_at, p50_p99_max, pct, Baton, BoxError, Cpu, CpuClock, Lab, Result,
};

const WARMUP: Duration = Duration::from_secs(1);

pub struct ClaimArgs {
    pub workers: usize,
    pub seconds: u64,
    pub calls: u64,
    pub waiting: usize,
    pub offers: usize,
}

pub async fn run(lab: &mut Lab, args: &ClaimArgs) -> Result<()> {
    lab.flush().await?;
    let (sha, script_keys) = lab.load_script("claimResource").await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let channels = baton.channels(args.workers.max(args.waiting) + 1).await?;
    let clients: Vec<_> = channels.iter().map(|c| ClaimServiceClient::new(c.clone())).collect();
    let k = args.workers;

    eprintln!("[claims] redis-benchmark claimResource, K={k}, {} claims", args.calls);
    offer(&clients[0], "ref", args.calls).await?;
    let config = Config::default();
    let keys = Keys::new(config.key_prefix.clone());
    let pool = keys.pool("ref");
    let all = pool.with_memory();
    if all.len() != script_keys {
        return Err(format!(
            "claimResource takes {script_keys} keys but PoolKeys::with_memory has {}: update bench/scenarios/claims.rs",
            all.len()
        )
        .into());
    }
    // ARGV as Pools::claim builds it: claimer, attributes JSON, wait 0, max line, channel, pool,
    // no request id (retention, max entries), no hold.
    let argv = [
        "bench-ref".to_string(),
        "{}".to_string(),
        "0".to_string(),
        config.pool.max_line.to_string(),
        keys.announce(baton::store::keys::ChannelKind::Pool, "ref"),
        "ref".to_string(),
        String::new(),
        config.idempotency.retention_ms.to_string(),
        config.idempotency.max_entries.to_string(),
        "0".to_string(),
    ];
    let reference = lab.redis_benchmark(k, args.calls, &sha, &all, &argv).await?;
    let claimed: u64 = redis::cmd("ZCARD").arg(&pool.claimed).query_async(&mut lab.conn).await?;
    if claimed != args.calls {
        return Err(format!("redis-benchmark's {} claims took {claimed} resources", args.calls).into());
    }

    eprintln!("[claims] gRPC Claim+Return(reuse), K={k}, {} s", args.seconds);
    offer(&clients[0], "cycle", 2 * k as u64).await?;
    let cycles = cycle_phase(&clients[..k], "cycle", Duration::from_secs(args.seconds), lab.pid).await?;

    eprintln!("[claims] gRPC Claim only, K={k}, {} claims", args.calls);
    offer(&clients[0], "only", args.calls).await?;
    let only = claim_only(&clients[..k], "only", args.calls, lab.pid).await?;

    eprintln!("[claims] Offer → waiting claim, {} claimers in line, {} offers", args.waiting, args.offers);
    let handover = offer_to_waiting(&clients[..args.waiting], &clients[args.waiting], "line", args.offers).await?;
    baton.stop().await?;

    println!();
    println!(
        "Claims: K={k} claimers, one connection each; Claim without wait; redis-benchmark -c {k} runs claimResource by FCALL"
    );
    println!(
        "{:<34} {:>10} {:>8} {:>18} {:>18} {:>20}",
        "", "claims/s", "÷Redis", "Claim p50/p99", "Return p50/p99", "CPU redis/client/rest"
    );
    let lat = |h: &Histogram<u64>| format!("{:.2} / {:.2}", ms_at(h, 0.5), ms_at(h, 0.99));
    println!(
        "{:<34} {:>10.0} {:>8} {:>18} {:>18} {:>20}",
        format!("gRPC Claim+Return(reuse), {} s", args.seconds),
        cycles.per_sec,
        pct(cycles.per_sec / reference.rps),
        lat(&cycles.claim),
        lat(&cycles.ret),
        cycles.cpu.to_string()
    );
    println!(
        "{:<34} {:>10.0} {:>8} {:>18} {:>18} {:>20}",
        format!("gRPC Claim only, {} claims", args.calls),
        only.per_sec,
        pct(only.per_sec / reference.rps),
        lat(&only.claim),
        "",
        only.cpu.to_string()
    );
    println!(
        "{:<34} {:>10.0} {:>8} {:>18} {:>18} {:>20}",
        format!("redis-benchmark, {} claims", args.calls),
        reference.rps,
        "100%",
        format!("{:.2} / {:.2}", reference.p50_ms, reference.p99_ms),
        "",
        reference.cpu.to_string()
    );
    if cycles.empty > 0 {
        println!("WARNING: {} claims found nothing idle: the pool, not Baton, limited the cycle row", cycles.empty);
    }
    println!();
    println!(
        "Offer → waiting claim: {} claimers wait in line (Claim, wait=30s); one Offer at a time, {} offers",
        args.waiting, args.offers
    );
    println!("{:<34} {:>24} {:>8}", "", "p50/p99/max (ms)", "handed");
    println!(
        "{:<34} {:>24} {:>8}",
        "Offer sent → claimer has it",
        p50_p99_max(&handover.latency),
        format!("{}/{}", handover.handed, args.offers)
    );
    println!("Latencies in ms, per RPC, seen by the client. ÷Redis: claims/s over redis-benchmark's script calls/s.");
    println!("  Claim+Return does two RPCs (two scripts) per claim, so a free gRPC layer would reach about 50% there.");
    println!("Offer → claim: both ends are tokio Instants in this one process (driver, claimers and Baton), µs; it");
    println!("  spans the Offer RPC, the hand-over in the offer script, its pub/sub message, the waiting claim's");
    println!(
        "  pickup script and the Claim reply. handed: Offers that went straight to a waiting claim (must be all)."
    );
    crate::lab::print_load();
    Ok(())
}

/// Offers `count` idle resources `r-0000000`… to `pool`, as many per Offer as the server takes.
async fn offer(client: &ClaimServiceClient<Channel>, pool: &str, count: u64) -> Result<()> {
    let chunk = u64::from(Config::default().limits.max_batch);
    let mut client = client.clone();
    for c in 0..count.div_ceil(chunk) {
        let resources = (c * chunk..((c + 1) * chunk).min(count))
            .map(|i| pb::Resource { id: format!("r-{i:07}"), ..Default::default() })
            .collect();
        client.offer(pb::OfferRequest { request_id: String::new(), pool: pool.into(), resources }).await?;
    }
    Ok(())
}

fn claim_request(pool: &str, claimer: &str, wait_ms: u64) -> pb::ClaimRequest {
    pb::ClaimRequest {
        pool: pool.into(),
        claimer_id: claimer.into(),
        wait: if wait_ms > 0 { dur(wait_ms) } else { None },
        ..Default::default()
    }
}

struct Cycles {
    per_sec: f64,
    claim: Histogram<u64>,
    ret: Histogram<u64>,
    empty: u64,
    cpu: Cpu,
}

async fn cycle_phase(
    clients: &[ClaimServiceClient<Channel>],
    pool: &str,
    measured: Duration,
    redis_pid: u32,
) -> Result<Cycles> {
    let from = Instant::now() + WARMUP;
    let until = from + measured;
    let cpu = tokio::spawn(async move {
        tokio::time::sleep_until(from).await;
        let before = CpuClock::read(redis_pid)?;
        tokio::time::sleep_until(until).await;
        Ok::<_, BoxError>(CpuClock::read(redis_pid)?.since(&before))
    });
    let workers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| {
            let (mut client, pool) = (client.clone(), pool.to_string());
            tokio::spawn(async move {
                let claimer = format!("claimer-{i}");
                let (mut cycles, mut empty, mut claim, mut ret) = (0u64, 0u64, histogram(), histogram());
                while Instant::now() < until {
                    let started = Instant::now();
                    let reply = client.claim(claim_request(&pool, &claimer, 0)).await?.into_inner();
                    if started >= from {
                        claim.saturating_record(micros(started.elapsed()));
                    }
                    let Some(resource) = reply.resource else {
                        empty += u64::from(started >= from);
                        continue;
                    };
                    let started = Instant::now();
                    let request = pb::ReturnRequest {
                        request_id: String::new(),
                        pool: pool.clone(),
                        resource_id: resource.id,
                        token: reply.token,
                        reuse: true,
                    };
                    client.r#return(request).await?;
                    let done = Instant::now();
                    if started >= from {
                        ret.saturating_record(micros(done - started));
                    }
                    cycles += u64::from(done >= from && done <= until);
                }
                Ok::<_, BoxError>((cycles, empty, claim, ret))
            })
        })
        .collect();
    let (mut cycles, mut empty, mut claim, mut ret) = (0, 0, histogram(), histogram());
    for w in futures::future::join_all(workers).await {
        let (c, e, h1, h2) = w??;
        cycles += c;
        empty += e;
        claim.add(&h1)?;
        ret.add(&h2)?;
    }
    Ok(Cycles { per_sec: cycles as f64 / measured.as_secs_f64(), claim, ret, empty, cpu: cpu.await?? })
}

struct ClaimOnly {
    per_sec: f64,
    claim: Histogram<u64>,
    cpu: Cpu,
}

async fn claim_only(
    clients: &[ClaimServiceClient<Channel>],
    pool: &str,
    calls: u64,
    redis_pid: u32,
) -> Result<ClaimOnly> {
    let left = Arc::new(AtomicU64::new(calls));
    let before = CpuClock::read(redis_pid)?;
    let started = Instant::now();
    let workers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| {
            let (mut client, pool, left) = (client.clone(), pool.to_string(), left.clone());
            tokio::spawn(async move {
                let claimer = format!("claimer-{i}");
                let (mut got, mut latency) = (0u64, histogram());
                while left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1)).is_ok() {
                    let t = Instant::now();
                    let reply = client.claim(claim_request(&pool, &claimer, 0)).await?.into_inner();
                    latency.saturating_record(micros(t.elapsed()));
                    got += u64::from(reply.resource.is_some());
                }
                Ok::<_, BoxError>((got, latency))
            })
        })
        .collect();
    let (mut got, mut claim) = (0, histogram());
    for w in futures::future::join_all(workers).await {
        let (g, h) = w??;
        got += g;
        claim.add(&h)?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = CpuClock::read(redis_pid)?.since(&before);
    if got != calls {
        return Err(format!("claims: {calls} Claims on a pool of {calls} idle resources got {got}").into());
    }
    Ok(ClaimOnly { per_sec: calls as f64 / elapsed, claim, cpu })
}

struct Handover {
    latency: Histogram<u64>,
    handed: u32,
}

async fn offer_to_waiting(
    claimers: &[ClaimServiceClient<Channel>],
    driver: &ClaimServiceClient<Channel>,
    pool: &str,
    offers: usize,
) -> Result<Handover> {
    let stop = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, Instant)>();
    let tasks: Vec<_> = claimers
        .iter()
        .enumerate()
        .map(|(i, client)| {
            let (mut client, pool, stop, tx) = (client.clone(), pool.to_string(), stop.clone(), tx.clone());
            tokio::spawn(async move {
                let claimer = format!("waiter-{i}");
                loop {
                    let reply = tokio::select! {
                        _ = stop.cancelled() => return Ok::<_, BoxError>(()),
                        r = client.claim(claim_request(&pool, &claimer, 30_000)) => r?.into_inner(),
                    };
                    let Some(resource) = reply.resource else { continue };
                    let _ = tx.send((resource.id.clone(), Instant::now()));
                    // The resource leaves the pool; the driver offers a new one each time.
                    let request = pb::ReturnRequest {
                        request_id: String::new(),
                        pool: pool.clone(),
                        resource_id: resource.id,
                        token: reply.token,
                        reuse: false,
                    };
                    client.r#return(request).await?;
                }
            })
        })
        .collect();
    drop(tx);
    let mut driver = driver.clone();
    // Every claimer is in line before the first offer.
    let started = Instant::now();
    loop {
        let status = driver.get_pool(pb::GetPoolRequest { pool: pool.into() }).await?.into_inner().status;
        if status.is_some_and(|s| s.waiting_claims as usize >= claimers.len()) {
            break;
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err("claims: the claimers did not all join the line within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (mut latency, mut handed) = (histogram(), 0u32);
    for i in 0..offers {
        let id = format!("h-{i:07}");
        let sent = Instant::now();
        let reply = driver
            .offer(pb::OfferRequest {
                request_id: String::new(),
                pool: pool.into(),
                resources: vec![pb::Resource { id: id.clone(), ..Default::default() }],
            })
            .await?
            .into_inner();
        handed += reply.handed;
        loop {
            let (got, at) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .map_err(|_| format!("claims: resource {id} did not reach a claimer within 10 s"))?
                .ok_or("claims: every claimer stopped")?;
            if got == id {
                latency.saturating_record(micros(at.saturating_duration_since(sent)));
                break;
            }
        }
        // Let the claimer that got it rejoin the line, so W stay waiting (the next offer does
        // not depend on it: W − 1 are still in line).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    stop.cancel();
    for t in futures::future::join_all(tasks).await {
        t??;
    }
    Ok(Handover { latency, handed })
}
