//! dispatch: latency from "due" to "acquired" with long polls.
//!
//! K workers wait in Acquire(wait=30 s, max_leases=1) on an empty queue. Beforehand a driver
//! has acquired every agent the run needs (one-shot agents), so nothing is due. Then, at a
//! fixed arrival rate, the driver Releases one of them with no delay: the release script
//! makes it due at Redis time `next_run_at` (which Release returns) and publishes the queue's
//! wake-up. Each worker that gets a lease Completes it (SUCCESS removes a one-shot agent) and
//! waits again.
//!
//! Two latencies per agent:
//! - Redis clock: acquired_at − next_run_at, where acquired_at = the lease's deadline − its
//!   timeout (both set by the acquire script from Redis TIME). Whole ms: Baton's scripts read
//!   TIME in ms. This is the server-side dispatch latency.
//! - client: when the worker received the lease minus when the driver sent the Release
//!   (tokio Instants in this one process, µs). It adds the Release request's trip in and the
//!   Acquire response's trip out.
//!
//! With `--dispatch-via session` (the default runs both), each worker instead holds one
//! Session stream with credit 1: the server pushes the lease when it becomes due, and the
//! worker sends the completion and its credit back on the stream.
//!
//! The floor: sequential PINGs from this process to the same redis-server over the same
//! unix socket.

use std::{collections::HashMap, time::Duration};

use baton::pb::{self, agent_service_client::AgentServiceClient};
use hdrhistogram::Histogram;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

use super::cycles::register;
use crate::lab::{
    bench_config, dur, histogram, micros, p50_p99_max, quantile_ms, ts_ms, Baton, BoxError, Cpu, CpuClock, Lab, Result,
    LEASE_TIMEOUT_MS,
};

/// How the workers wait for work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// Acquire(wait=30s, max_leases=1), then Complete.
    Acquire,
    /// One Session stream each, credit 1 (what the worker helpers use).
    Session,
}

pub struct DispatchArgs {
    pub via: Vec<Via>,
    pub workers: Vec<usize>,
    pub rates: Vec<u32>,
    pub seconds: u64,
}

struct Row {
    via: Via,
    workers: usize,
    rate: u32,
    released: usize,
    acquired: usize,
    achieved_rate: f64,
    redis_ms: Vec<i64>,
    client: Histogram<u64>,
    scripts_per_lease: f64,
    cpu: Cpu,
}

pub async fn run(lab: &mut Lab, args: &DispatchArgs) -> Result<()> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    // One connection per worker, as each would be its own process, and one for the driver.
    let most = args.workers.iter().copied().max().unwrap_or(1);
    let channels = baton.channels(most + 1).await?;
    eprintln!("[dispatch] Redis PING round trips (the floor)");
    let ping = lab.ping_rtt(2000).await?;
    let mut rows = Vec::new();
    for &via in &args.via {
        for &k in &args.workers {
            for &rate in &args.rates {
                eprintln!("[dispatch] {k} workers waiting ({via:?}), {rate} agents/s made due for {} s", args.seconds);
                // The driver's connection is the last one, whatever K.
                rows.push(one(lab, via, &channels[..k], &channels[most], k, rate, args.seconds).await?);
            }
        }
    }
    baton.stop().await?;

    println!();
    println!(
        "Dispatch: K workers wait on an empty queue, in Acquire(wait=30s, max_leases=1) or on a Session stream with \
         credit 1; a driver makes agents due (Release, delay 0) at a fixed rate for {} s",
        args.seconds
    );
    println!(
        "{:<8} {:>4} {:>7} {:>8} {:>8} {:>9} {:>22} {:>24} {:>10} {:>20}",
        "via",
        "K",
        "rate/s",
        "due",
        "acquired",
        "achieved",
        "Redis clock p50/p99/max",
        "client p50/p99/max",
        "scripts/L",
        "CPU redis/bench/rest"
    );
    for r in &rows {
        let mut sorted = r.redis_ms.clone();
        sorted.sort_unstable();
        let redis = if sorted.is_empty() {
            "-".to_string()
        } else {
            format!("{} / {} / {}", quantile_ms(&sorted, 0.5), quantile_ms(&sorted, 0.99), sorted[sorted.len() - 1])
        };
        println!(
            "{:<8} {:>4} {:>7} {:>8} {:>8} {:>9.0} {:>22} {:>24} {:>10.1} {:>20}",
            format!("{:?}", r.via).to_lowercase(),
            r.workers,
            r.rate,
            r.released,
            r.acquired,
            r.achieved_rate,
            redis,
            p50_p99_max(&r.client),
            r.scripts_per_lease,
            r.cpu.to_string()
        );
    }
    println!("{:<8} {:>4} {:>7} {:>8} {:>8} {:>9} {:>22} {:>24}", "PING", "", "", "", "", "", "", p50_p99_max(&ping));
    println!("Latencies in ms. Redis clock: acquired_at (lease deadline − timeout) − next_run_at (from Release), both");
    println!(
        "  Redis TIME in whole ms as the scripts read it. client: lease received − Release sent, one process, µs."
    );
    println!("PING: sequential PINGs from this process over the same unix socket: one Redis round trip, the floor.");
    println!("scripts/L: script calls (INFO commandstats) per lease, less the Release and Complete of each: how many");
    println!(
        "  acquire scripts each lease cost. A wake-up wakes one waiting Acquire (or session), which wakes the next"
    );
    println!("  if full. On sessions a completion may share its script with others, so the figure can read low.");
    println!("CPU: redis-server / this process (Baton + clients) / rest of the machine, 100% = one core.");
    crate::lab::print_load();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn one(
    lab: &mut Lab,
    via: Via,
    channels: &[tonic::transport::Channel],
    driver_channel: &tonic::transport::Channel,
    k: usize,
    rate: u32,
    seconds: u64,
) -> Result<Row> {
    let queue = format!("dispatch-{k}-{rate}");
    let count = u64::from(rate) * seconds;
    let driver_channel = driver_channel.clone();
    let mut driver = crate::lab::agents(driver_channel.clone());
    register(&driver, &queue, count, None).await?;
    // The driver holds every agent: nothing is due when the workers start waiting.
    let mut held: Vec<(String, u64)> = Vec::with_capacity(count as usize);
    while (held.len() as u64) < count {
        let request =
            pb::AcquireRequest { queue: queue.clone(), worker_id: "driver".into(), max_leases: 1000, wait: None };
        let leases = driver.acquire(request).await?.into_inner().leases;
        if leases.is_empty() {
            return Err(format!("dispatch: the driver got {} of {count} agents", held.len()).into());
        }
        held.extend(leases.into_iter().map(|l| (l.name, l.token)));
    }

    let stop = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, Instant, i64)>();
    let workers: Vec<_> = (0..k)
        .map(|i| {
            let client = AgentServiceClient::new(channels[i].clone());
            let (queue, stop, tx) = (queue.clone(), stop.clone(), tx.clone());
            let worker_id = format!("worker-{i}");
            match via {
                Via::Acquire => tokio::spawn(long_poll(client, queue, worker_id, stop, tx)),
                Via::Session => tokio::spawn(session(client, queue, worker_id, stop, tx)),
            }
        })
        .collect();
    drop(tx);
    // Every worker has run its first acquire script and sleeps on the queue's wake-up.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let scripts_before = lab.script_calls().await?;
    let cpu_before = CpuClock::read(lab.pid)?;
    let started = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut releases = Vec::with_capacity(held.len());
    for (name, token) in held {
        ticks.tick().await;
        let mut client = AgentServiceClient::new(driver_channel.clone());
        let request = pb::ReleaseRequest { queue: queue.clone(), name: name.clone(), token, delay: None };
        let sent = Instant::now();
        releases.push(tokio::spawn(async move {
            let next_run = ts_ms(&client.release(request).await?.into_inner().next_run_at)?;
            Ok::<_, BoxError>((name, sent, next_run))
        }));
    }
    let issued = started.elapsed();
    let mut due: HashMap<String, (Instant, i64)> = HashMap::with_capacity(releases.len());
    for r in futures::future::join_all(releases).await {
        let (name, sent, next_run) = r??;
        due.insert(name, (sent, next_run));
    }
    // Wait for the stragglers, at most 10 s.
    let mut got = Vec::with_capacity(due.len());
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < due.len() {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(item)) => got.push(item),
            _ => break,
        }
    }
    let cpu = CpuClock::read(lab.pid)?.since(&cpu_before);
    let scripts = lab.script_calls().await?.saturating_sub(scripts_before);
    stop.cancel();
    for w in futures::future::join_all(workers).await {
        w??;
    }

    let mut redis_ms = Vec::with_capacity(got.len());
    let mut client = histogram();
    for (name, received, acquired_at) in &got {
        let Some((sent, next_run)) = due.get(name) else { continue };
        redis_ms.push(acquired_at - next_run);
        client.saturating_record(micros(received.saturating_duration_since(*sent)));
    }
    // Each lease also ran one release and one complete script.
    let acquired = got.len();
    let scripts_per_lease = if acquired > 0 {
        scripts.saturating_sub(due.len() as u64 + acquired as u64) as f64 / acquired as f64
    } else {
        0.0
    };
    Ok(Row {
        via,
        workers: k,
        rate,
        released: due.len(),
        acquired,
        achieved_rate: due.len() as f64 / issued.as_secs_f64().max(1e-9),
        redis_ms,
        client,
        scripts_per_lease,
        cpu,
    })
}

/// What a worker reports per lease: its name, when it arrived here, and acquired_at (Redis).
type Got = mpsc::UnboundedSender<(String, Instant, i64)>;

/// A worker waiting in Acquire(wait=30 s, max_leases=1), completing each lease.
async fn long_poll(
    mut client: AgentServiceClient<tonic::transport::Channel>,
    queue: String,
    worker_id: String,
    stop: CancellationToken,
    tx: Got,
) -> Result<()> {
    loop {
        let request =
            pb::AcquireRequest { queue: queue.clone(), worker_id: worker_id.clone(), max_leases: 1, wait: dur(30_000) };
        let leases = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            r = client.acquire(request) => r?.into_inner().leases,
        };
        let received = Instant::now();
        for lease in leases {
            let acquired_at = ts_ms(&lease.deadline)? - LEASE_TIMEOUT_MS as i64;
            let _ = tx.send((lease.name.clone(), received, acquired_at));
            let request = pb::CompleteRequest {
                queue: lease.queue,
                name: lease.name,
                token: lease.token,
                outcome: pb::Outcome::Success as i32,
                ..Default::default()
            };
            client.complete(request).await?;
        }
    }
}

/// A worker on one Session stream with credit 1: each lease pushed is completed on the stream,
/// with its credit back.
async fn session(
    mut client: AgentServiceClient<tonic::transport::Channel>,
    queue: String,
    worker_id: String,
    stop: CancellationToken,
    tx: Got,
) -> Result<()> {
    let (requests, rx) = mpsc::unbounded_channel();
    let open = pb::SessionOpen { queue, worker_id };
    requests.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() })?;
    let mut stream = client.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
    loop {
        let r = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            r = stream.message() => match r? {
                Some(r) => r,
                None => return Ok(()),
            },
        };
        let received = Instant::now();
        for lease in r.leases {
            let acquired_at = ts_ms(&lease.deadline)? - LEASE_TIMEOUT_MS as i64;
            let _ = tx.send((lease.name.clone(), received, acquired_at));
            let done = pb::SessionCompletion {
                name: lease.name,
                token: lease.token,
                outcome: pb::Outcome::Success as i32,
                ..Default::default()
            };
            requests.send(pb::SessionRequest { credit: 1, completions: vec![done], ..Default::default() })?;
        }
    }
}
