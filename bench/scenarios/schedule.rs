//! schedule: a burst of delayed messages all due within one second.
//!
//! `--messages` messages (100,000) are scheduled ahead by many concurrent clients, with
//! deliver_at spread uniformly over a `--window-ms` window (1 s) that starts once they are
//! all scheduled: the lead is sized from a probe of the scheduling rate. Then `--consumers`
//! consumers Subscribe(max_in_flight = the server's max_batch) and Ack every message as it
//! arrives. Reported:
//! - lateness = receipt − deliver_at, in Redis time: each receipt is stamped with this
//!   machine's clock translated to the Redis clock (redis-server runs on this machine and
//!   reads the same clock; the offset is measured at start and printed with the machine);
//! - the server-side view, `baton_schedule_lateness_seconds` (delivery script's Redis TIME
//!   minus deliver_at, first deliveries), read from a Prometheus recorder installed in this
//!   process for this scenario (summary quantiles);
//! - delivery throughput: messages per second from the first receipt to the last.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use baton::{
    config::Config,
    pb::{self, schedule_service_client::ScheduleServiceClient},
};
use futures::StreamExt;
use hdrhistogram::Histogram;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use crate::lab::{
    bench_config, fmt_ms, histogram, ms_at, redis_now_ms, timestamp_ms, Baton, BoxError, Cpu, CpuClock, Lab,
    RedisClock, Result,
};

pub struct ScheduleArgs {
    /// How the consumers take their messages, one run each.
    pub via: Vec<Via>,
    pub messages: u64,
    pub window_ms: u64,
    pub consumers: usize,
    pub schedulers: usize,
    pub timeout_s: u64,
}

/// How a consumer takes messages and acks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// One Receive stream: deliveries pushed, acks sent back on it (what the helpers use).
    Receive,
    /// A Subscribe stream, and a unary Ack per message.
    Subscribe,
}

impl Via {
    fn receiver(self) -> &'static str {
        match self {
            Via::Receive => "burst-receive",
            Via::Subscribe => "burst-subscribe",
        }
    }
}

/// Messages per ScheduleBatch while scheduling ahead.
const SCHEDULE_BATCH: u64 = 100;

/// Schedulers share this many connections.
const SCHEDULE_CONNECTIONS: usize = 8;
/// Acks in flight per consumer.
const ACKS_IN_FLIGHT: usize = 64;

static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Bucket bounds of `baton_schedule_lateness_seconds` in this process's recorder: 0.5 ms to
/// about 2 min in steps of 10 %, so an interpolated quantile is within 10 %. Left to itself the
/// exporter renders the metric as a summary, whose sketch (metrics-util's defaults) keeps about
/// a 700× range of values: in a burst whose lateness runs from 1 ms to seconds it collapses the
/// low end, and every quantile then reads as the maximum (seen here: all 1.83 s, mean 0.83 s).
fn lateness_buckets() -> Vec<f64> {
    std::iter::successors(Some(0.0005_f64), |b| Some(b * 1.1)).take_while(|b| *b < 130.0).collect()
}

/// The process-wide Prometheus recorder, installed on first use (so the other scenarios run
/// without one, as before).
fn recorder() -> Option<&'static PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(LATENESS_METRIC.into()), &lateness_buckets())
                .ok()?
                .install_recorder()
                .ok()
        })
        .as_ref()
}

const LATENESS_METRIC: &str = "baton_schedule_lateness_seconds";

/// The delivery phase, from the window's start.
#[derive(Clone, Copy)]
struct Delivery {
    finished: bool,
    /// Redis time from the window's end to the last ack (or the timeout).
    drained_ms: f64,
    /// EVALSHA calls: one per Ack plus delivery rounds (and a few background scripts).
    scripts: u64,
    cpu: Cpu,
}

/// One consumer's view.
struct Seen {
    lateness_us: Histogram<u64>,
    early: u64,
    redelivered: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

pub async fn run(lab: &mut Lab, args: &ScheduleArgs) -> Result<()> {
    for &via in &args.via {
        run_via(lab, args, via).await?;
    }
    Ok(())
}

async fn run_via(lab: &mut Lab, args: &ScheduleArgs, via: Via) -> Result<()> {
    lab.flush().await?;
    let metrics = recorder();
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let sched_channels = baton.channels(SCHEDULE_CONNECTIONS).await?;
    let consumer_channels = baton.channels(args.consumers).await?;
    let max_in_flight = Config::default().limits.max_batch;

    // How fast can we schedule? A probe on another receiver, far in the future.
    let probe = 2_000.min(args.messages);
    let now = redis_now_ms(&mut lab.conn).await?;
    let t = Instant::now();
    schedule_all(&sched_channels, args.schedulers, "probe", probe, move |_| now + 3_600_000).await?;
    let rate = probe as f64 / t.elapsed().as_secs_f64();
    let lead_ms = (1.5 * args.messages as f64 / rate * 1000.0) as i64 + 3_000;
    eprintln!(
        "[schedule {via:?}] probe: {rate:.0} messages/s scheduled; scheduling {} messages due in a {} ms window starting in {} ms",
        args.messages, args.window_ms, lead_ms
    );

    let window_start = redis_now_ms(&mut lab.conn).await? + lead_ms;
    let (n, window) = (args.messages, args.window_ms as i64);
    let deliver_at = move |i: u64| window_start + (i as i64 * window) / n as i64;
    let t = Instant::now();
    let cpu_sched = CpuClock::read(lab.pid)?;
    schedule_all(&sched_channels, args.schedulers, via.receiver(), n, deliver_at).await?;
    let schedule_secs = t.elapsed().as_secs_f64();
    let cpu_sched = CpuClock::read(lab.pid)?.since(&cpu_sched);
    let margin = window_start - redis_now_ms(&mut lab.conn).await?;
    if margin < 500 {
        return Err(format!(
            "schedule: scheduling ended {} ms before the window (want ≥ 500 ms); the machine is too busy to size the lead",
            margin
        )
        .into());
    }
    eprintln!(
        "[schedule {via:?}] scheduled in {schedule_secs:.1} s; {} consumers subscribe, window starts in {margin} ms",
        args.consumers
    );

    let received = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    let stop = CancellationToken::new();
    let mut consumers = Vec::new();
    for (i, channel) in consumer_channels.iter().enumerate() {
        consumers.push(tokio::spawn(consume(
            via,
            channel.clone(),
            format!("consumer-{i}"),
            max_in_flight,
            lab.clock,
            n,
            received.clone(),
            acked.clone(),
            done_tx.clone(),
            stop.clone(),
        )));
    }
    drop(done_tx);
    let window_opens = Instant::now() + Duration::from_millis(margin as u64);
    let wait_until = window_opens + Duration::from_millis(args.window_ms) + Duration::from_secs(args.timeout_s);
    // CPU and script counts from the window's start: the consumers only wait before it.
    tokio::time::sleep_until(window_opens).await;
    let cpu_before = CpuClock::read(lab.pid)?;
    let scripts_before = lab.script_calls().await?;
    let profiling = lab.profile_start().await?;
    let finished = matches!(tokio::time::timeout_at(wait_until, done_rx.recv()).await, Ok(Some(())));
    let drained_ms = (lab.clock.now_us() - (window_start + window) * 1000) as f64 / 1000.0;
    let cpu = CpuClock::read(lab.pid)?.since(&cpu_before);
    let scripts = lab.script_calls().await?.saturating_sub(scripts_before);
    stop.cancel();
    let mut seen = Vec::new();
    for c in consumers {
        seen.push(
            tokio::time::timeout(Duration::from_secs(30), c)
                .await
                .map_err(|_| "schedule: a consumer did not stop")???,
        );
    }
    baton.stop().await?;
    let server = metrics.map(|h| {
        let text = h.render();
        if let Ok(path) = std::env::var("BATON_BENCH_DUMP_METRICS") {
            let _ = std::fs::write(path, &text);
        }
        server_lateness(&text, via.receiver())
    });
    let delivery = Delivery { finished, drained_ms, scripts, cpu };
    print(args, via, rate, schedule_secs, cpu_sched, &received, &acked, &delivery, &seen, server)?;
    if profiling {
        lab.profile_print().await?;
    }
    Ok(())
}

/// Schedules `count` messages to `receiver` in ScheduleBatch calls of `SCHEDULE_BATCH`,
/// `concurrency` calls in flight over `channels`.
async fn schedule_all(
    channels: &[Channel],
    concurrency: usize,
    receiver: &str,
    count: u64,
    deliver_at: impl Fn(u64) -> i64 + Send + Sync + Copy + 'static,
) -> Result<()> {
    let next = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|i| {
            let mut client = ScheduleServiceClient::new(channels[i % channels.len()].clone());
            let (next, receiver) = (next.clone(), receiver.to_string());
            tokio::spawn(async move {
                loop {
                    let first = next.fetch_add(SCHEDULE_BATCH, Ordering::Relaxed);
                    if first >= count {
                        return Ok::<_, BoxError>(());
                    }
                    let messages = (first..count.min(first + SCHEDULE_BATCH))
                        .map(|i| pb::ScheduleRequest {
                            receiver: receiver.clone(),
                            payload: format!("m{i}").into_bytes(),
                            when: Some(pb::schedule_request::When::DeliverAt(timestamp_ms(deliver_at(i)))),
                            ..Default::default()
                        })
                        .collect();
                    client.schedule_batch(pb::ScheduleBatchRequest { messages }).await?;
                }
            })
        })
        .collect();
    for t in futures::future::join_all(tasks).await {
        t??;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn consume(
    via: Via,
    channel: Channel,
    consumer: String,
    max_in_flight: u32,
    clock: RedisClock,
    total: u64,
    received: Arc<AtomicU64>,
    acked: Arc<AtomicU64>,
    done: mpsc::Sender<()>,
    stop: CancellationToken,
) -> Result<Seen> {
    let receiver = via.receiver();
    let mut client = ScheduleServiceClient::new(channel);
    let open = pb::SubscribeRequest { receiver: receiver.into(), consumer_id: consumer, max_in_flight };
    let count_acks = move |n: u64| {
        if n > 0 && acked.fetch_add(n, Ordering::Relaxed) + n == total {
            let _ = done.try_send(());
        }
    };
    let mut seen = Seen { lateness_us: histogram(), early: 0, redelivered: 0, first: None, last: None };
    let mut record = |msg: &pb::SubscribeResponse| -> Result<()> {
        let now_us = clock.now_us();
        let at = Instant::now();
        seen.first.get_or_insert(at);
        seen.last = Some(at);
        if msg.delivery_count > 1 {
            seen.redelivered += 1;
        } else {
            let due_us = crate::lab::ts_ms(&msg.deliver_at)? * 1000;
            if now_us < due_us {
                seen.early += 1;
            }
            seen.lateness_us.saturating_record((now_us - due_us).max(1) as u64);
        }
        received.fetch_add(1, Ordering::Relaxed);
        Ok(())
    };
    match via {
        Via::Receive => {
            // Every response's messages are acked in one message on the same stream.
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send(pb::ReceiveRequest { open: Some(open), acks: vec![] })?;
            let mut stream =
                client.receive(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
            loop {
                let response = tokio::select! {
                    _ = stop.cancelled() => break,
                    r = stream.message() => match r? {
                        Some(r) => r,
                        None => break,
                    },
                };
                count_acks(response.acked.len() as u64);
                let mut acks = Vec::with_capacity(response.messages.len());
                for msg in &response.messages {
                    record(msg)?;
                    acks.push(pb::ReceiveAck { id: msg.id.clone(), token: msg.token });
                }
                if !acks.is_empty() {
                    let _ = tx.send(pb::ReceiveRequest { open: None, acks });
                }
            }
        }
        Via::Subscribe => {
            let mut stream = client.subscribe(open).await?.into_inner();
            // Acks go out concurrently, on the same connection, as they would from one process.
            let (ack_tx, ack_rx) = mpsc::unbounded_channel::<pb::AckRequest>();
            let acker = tokio::spawn(async move {
                tokio_stream::wrappers::UnboundedReceiverStream::new(ack_rx)
                    .map(|request| {
                        let mut client = client.clone();
                        async move { client.ack(request).await }
                    })
                    .buffer_unordered(ACKS_IN_FLIGHT)
                    .for_each(|r| {
                        count_acks(u64::from(r.is_ok()));
                        async {}
                    })
                    .await
            });
            let result = async {
                loop {
                    let msg = tokio::select! {
                        _ = stop.cancelled() => break,
                        m = stream.message() => match m? {
                            Some(m) => m,
                            None => break,
                        },
                    };
                    record(&msg)?;
                    let _ = ack_tx.send(pb::AckRequest {
                        request_id: String::new(),
                        receiver: receiver.into(),
                        id: msg.id,
                        token: msg.token,
                    });
                }
                Ok::<_, BoxError>(())
            }
            .await;
            drop(ack_tx);
            let _ = acker.await;
            result?;
        }
    }
    Ok(seen)
}

/// The server's lateness histogram, from the exposition text.
struct ServerLateness {
    count: u64,
    mean_s: f64,
    p50_s: f64,
    p99_s: f64,
    /// Upper bound of the highest non-empty bucket.
    max_bound_s: f64,
}

fn server_lateness(text: &str, receiver: &str) -> Option<ServerLateness> {
    let label = format!("receiver=\"{receiver}\"");
    let mut buckets: Vec<(f64, u64)> = Vec::new();
    let (mut count, mut sum) = (None, None);
    for line in text.lines() {
        let Some((head, value)) = line.rsplit_once(' ') else { continue };
        if !head.contains(&label) {
            continue;
        }
        if head.starts_with(&format!("{LATENESS_METRIC}_bucket{{")) {
            let le = head.split("le=\"").nth(1)?.split('"').next()?;
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
            buckets.push((le, value.parse().ok()?));
        } else if head.starts_with(&format!("{LATENESS_METRIC}_count{{")) {
            count = value.parse().ok();
        } else if head.starts_with(&format!("{LATENESS_METRIC}_sum{{")) {
            sum = value.parse::<f64>().ok();
        }
    }
    let (count, sum) = (count?, sum?);
    if count == 0 || buckets.is_empty() {
        return None;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    // As Prometheus' histogram_quantile: linear within the bucket holding the rank.
    let quantile = |q: f64| {
        let rank = q * count as f64;
        let mut lower = (0.0, 0u64);
        for &(le, cumulative) in &buckets {
            if cumulative as f64 >= rank {
                if le.is_infinite() {
                    return lower.0;
                }
                let within = (cumulative - lower.1) as f64;
                let frac = if within > 0.0 { (rank - lower.1 as f64) / within } else { 1.0 };
                return lower.0 + (le - lower.0) * frac;
            }
            lower = (le, cumulative);
        }
        lower.0
    };
    let max_bound_s = buckets.iter().find(|(_, c)| *c >= count).map_or(f64::INFINITY, |(le, _)| *le);
    Some(ServerLateness { count, mean_s: sum / count as f64, p50_s: quantile(0.5), p99_s: quantile(0.99), max_bound_s })
}

#[allow(clippy::too_many_arguments)]
fn print(
    args: &ScheduleArgs,
    via: Via,
    probe_rate: f64,
    schedule_secs: f64,
    cpu_sched: Cpu,
    received: &AtomicU64,
    acked: &AtomicU64,
    delivery: &Delivery,
    seen: &[Seen],
    server: Option<Option<ServerLateness>>,
) -> Result<()> {
    let Delivery { finished, drained_ms, scripts, cpu } = *delivery;
    let mut lateness = histogram();
    let (mut early, mut redelivered) = (0, 0);
    let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
    for s in seen {
        lateness.add(&s.lateness_us)?;
        early += s.early;
        redelivered += s.redelivered;
        first = match (first, s.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        last = match (last, s.last) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    let received = received.load(Ordering::Relaxed);
    let span = match (first, last) {
        (Some(a), Some(b)) if b > a => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    println!();
    let consumers = match via {
        Via::Receive => format!(
            "{} consumers on Receive streams (max_in_flight={}), acking each response's messages in one message",
            args.consumers,
            Config::default().limits.max_batch
        ),
        Via::Subscribe => format!(
            "{} consumers Subscribe(max_in_flight={}) and Ack each ({} unary acks in flight per consumer)",
            args.consumers,
            Config::default().limits.max_batch,
            ACKS_IN_FLIGHT
        ),
    };
    println!(
        "Schedule burst via {via:?}: {} messages due uniformly within {} ms, scheduled ahead in ScheduleBatch calls of {} \
         ({} in flight, {} connections); {consumers}",
        args.messages, args.window_ms, SCHEDULE_BATCH, args.schedulers, SCHEDULE_CONNECTIONS,
    );
    println!("{:<38} {:>12} {:>12} {:>12} {:>10}", "", "p50 (ms)", "p99 (ms)", "max (ms)", "count");
    println!(
        "{:<38} {:>12} {:>12} {:>12} {:>10}",
        "lateness at the consumer (Redis time)",
        fmt_ms(ms_at(&lateness, 0.5)),
        fmt_ms(ms_at(&lateness, 0.99)),
        fmt_ms(lateness.max() as f64 / 1000.0),
        lateness.len()
    );
    match server {
        Some(Some(l)) => println!(
            "{:<38} {:>12} {:>12} {:>12} {:>10}   mean {} ms",
            "lateness in Baton (server histogram)",
            fmt_ms(l.p50_s * 1000.0),
            fmt_ms(l.p99_s * 1000.0),
            format!("≤ {}", fmt_ms(l.max_bound_s * 1000.0)),
            l.count,
            fmt_ms(l.mean_s * 1000.0)
        ),
        Some(None) => println!("lateness in Baton: {LATENESS_METRIC} not found in the recorder"),
        None => println!("lateness in Baton: no Prometheus recorder could be installed in this process"),
    }
    println!(
        "delivered {received} of {} ({}), acked {}; {:.0} messages/s delivered, first to last receipt over {:.2} s",
        args.messages,
        if finished { "all acked" } else { "TIMED OUT" },
        acked.load(Ordering::Relaxed),
        if span > 0.0 { (received.saturating_sub(1)) as f64 / span } else { 0.0 },
        span
    );
    println!(
        "scheduling: {:.1} s for {} messages ({:.0}/s; probe {:.0}/s), CPU redis/bench/rest {}",
        schedule_secs,
        args.messages,
        args.messages as f64 / schedule_secs,
        probe_rate,
        cpu_sched
    );
    let acked_n = acked.load(Ordering::Relaxed);
    println!(
        "last ack {} ms after the window closed; from the window's start: {} EVALSHA (delivery rounds, ack scripts and a \
         few background scripts), {:.2} per message",
        fmt_ms(drained_ms),
        scripts,
        if acked_n > 0 { scripts as f64 / acked_n as f64 } else { 0.0 }
    );
    println!("delivery CPU redis/bench/rest {cpu}; redeliveries {redelivered}; received before deliver_at {early}");
    println!(
        "lateness at the consumer: receipt stamped with this machine's clock + the measured offset to Redis TIME,"
    );
    println!("  minus deliver_at (whole ms, Redis clock). In Baton: the delivery script's TIME − deliver_at (first");
    println!("  deliveries), from the {LATENESS_METRIC} histogram of a Prometheus recorder this scenario");
    println!("  installs (the others run without); quantiles interpolated within buckets, max = the bucket bound.");
    crate::lab::print_load();
    Ok(())
}
