//! The scale scenario's steps beyond queues (see `scale`): scheduled messages, dead letters and
//! idle Session streams, each on an empty Redis and a fresh Baton.
//!
//! - `--scale-messages` messages scheduled an hour out: Schedule rate, Redis memory per
//!   message, GetHealth and ListMessages (first page) latency; then `--scale-due` more due at
//!   once, consumed by Receive streams: lateness p50/p99 (Redis clock);
//! - `--scale-dead-letters` dead letters of one queue (one-shot agents failed once with
//!   max_attempts 1): ListDeadLetters first page and 50 pages deep, RetryDeadLetter and
//!   DeleteDeadLetter latency, one Purge pass;
//! - `--scale-sessions` idle Session streams on one queue (credit 1 each, nothing due): this
//!   Baton's RSS per stream (`baton serve` in a process of its own, on default settings),
//!   Redis clients, idle Redis commands/s, and Register → grant latency through them.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::pb::{self, admin_service_client::AdminServiceClient, schedule_service_client::ScheduleServiceClient};
use futures::{StreamExt, TryStreamExt};
use tokio::{sync::mpsc, time::Instant};
use tonic::transport::Channel;

use super::measure::{drain_with, health_ms, median_ms, slowlog_read, slowlog_start, used_memory, Slow};
use crate::lab::{agents, bench_config, dur, histogram, micros, ms_at, timestamp_ms, Baton, BatonProcess, Lab, Result};

/// Messages per ScheduleBatch.
const SCHEDULE_BATCH: u64 = 500;

pub struct ScheduledRow {
    pub n: u64,
    pub schedule_per_s: f64,
    pub bytes_per_message: f64,
    pub health_ms: f64,
    pub list_ms: f64,
    pub due: u64,
    pub lateness_p50_ms: f64,
    pub lateness_p99_ms: f64,
}

/// Schedules `count` messages to `receiver`, due at `at(i)` (Redis clock, ms); messages/s.
async fn schedule(channels: &[Channel], receiver: &str, count: u64, at: impl Fn(u64) -> i64 + Copy) -> Result<f64> {
    let started = Instant::now();
    let batches = (0..count.div_ceil(SCHEDULE_BATCH)).map(|b| {
        let mut client = ScheduleServiceClient::new(channels[b as usize % channels.len()].clone());
        let messages = (b * SCHEDULE_BATCH..((b + 1) * SCHEDULE_BATCH).min(count))
            .map(|i| pb::ScheduleRequest {
                receiver: receiver.into(),
                payload: format!("message-{i:07}").into_bytes(),
                when: Some(pb::schedule_request::When::DeliverAt(timestamp_ms(at(i)))),
                ..Default::default()
            })
            .collect();
        async move { client.schedule_batch(pb::ScheduleBatchRequest { messages }).await }
    });
    futures::stream::iter(batches).buffer_unordered(8).try_for_each(|_| async { Ok(()) }).await?;
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

pub async fn scheduled_step(lab: &mut Lab, n: u64, due: u64) -> Result<(ScheduledRow, Slow)> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let channels = baton.channels(8).await?;
    let admin = AdminServiceClient::new(channels[0].clone());
    slowlog_start(lab).await?;
    let before = used_memory(lab).await?;
    let hour = crate::lab::redis_now_ms(&mut lab.conn).await? + 3_600_000;
    let schedule_per_s = schedule(&channels, "later", n, |_| hour).await?;
    let bytes_per_message = used_memory(lab).await?.saturating_sub(before) as f64 / n as f64;
    let health_ms = health_ms(&admin, 10).await?;
    let client = ScheduleServiceClient::new(channels[0].clone());
    let list_ms = median_ms(20, || {
        let mut c = client.clone();
        async move {
            c.list_messages(pb::ListMessagesRequest { receiver: "later".into(), page_size: 100, ..Default::default() })
                .await?;
            Ok(())
        }
    })
    .await?;

    // `due` messages due at once, 2 s from now, consumed by 4 Receive streams.
    let at = crate::lab::redis_now_ms(&mut lab.conn).await? + 2_000;
    schedule(&channels, "now", due, |_| at).await?;
    let lateness = Arc::new(std::sync::Mutex::new(histogram()));
    let received = Arc::new(AtomicU64::new(0));
    let clock = lab.clock;
    let consumers: Vec<_> = (0..4)
        .map(|c| {
            let mut client = ScheduleServiceClient::new(channels[c % channels.len()].clone());
            let (lateness, received) = (lateness.clone(), received.clone());
            tokio::spawn(async move {
                let (tx, rx) = mpsc::unbounded_channel();
                let open =
                    pb::SubscribeRequest { receiver: "now".into(), consumer_id: format!("c{c}"), max_in_flight: 1_000 };
                tx.send(pb::ReceiveRequest { open: Some(open), acks: vec![] })?;
                let mut stream =
                    client.receive(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
                while received.load(Ordering::Relaxed) < due {
                    let Ok(next) = tokio::time::timeout(Duration::from_secs(1), stream.message()).await else {
                        continue;
                    };
                    let Some(response) = next? else { break };
                    let now_us = clock.now_us();
                    let mut acks = Vec::with_capacity(response.messages.len());
                    {
                        let mut h = lateness.lock().expect("lateness");
                        for m in &response.messages {
                            let due_us = crate::lab::ts_ms(&m.deliver_at)? * 1000;
                            h.saturating_record((now_us - due_us).max(1) as u64);
                            acks.push(pb::ReceiveAck { id: m.id.clone(), token: m.token });
                        }
                    }
                    received.fetch_add(acks.len() as u64, Ordering::Relaxed);
                    if !acks.is_empty() {
                        let _ = tx.send(pb::ReceiveRequest { open: None, acks });
                    }
                }
                Ok::<(), crate::lab::BoxError>(())
            })
        })
        .collect();
    for c in consumers {
        c.await??;
    }
    let h = lateness.lock().expect("lateness").clone();
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    let row = ScheduledRow {
        n,
        schedule_per_s,
        bytes_per_message,
        health_ms,
        list_ms,
        due,
        lateness_p50_ms: ms_at(&h, 0.5),
        lateness_p99_ms: ms_at(&h, 0.99),
    };
    Ok((row, slow))
}

pub struct DeadLetterRow {
    pub n: u64,
    pub first_page_ms: f64,
    pub deep_page_ms: f64,
    pub retry_ms: f64,
    pub delete_ms: f64,
    pub purge_ms: f64,
}

pub async fn dead_letters_step(lab: &mut Lab, n: u64, workers: usize, batch: u32) -> Result<(DeadLetterRow, Slow)> {
    lab.flush().await?;
    let mut config = bench_config();
    config.dead_letter.max_entries = config.dead_letter.max_entries.max(2 * n);
    let baton = Baton::start(&lab.url(), config).await?;
    let channel = baton.channel().await?;
    let client = agents(channel.clone());
    let mut admin = AdminServiceClient::new(channel);
    let chunk = u64::from(baton::config::Config::default().limits.max_batch);
    let registers = (0..n.div_ceil(chunk)).map(|c| {
        let agents = (c * chunk..((c + 1) * chunk).min(n))
            .map(|i| pb::Agent {
                name: format!("dead-{i:07}"),
                timeout: dur(crate::lab::LEASE_TIMEOUT_MS),
                max_attempts: 1,
                ..Default::default()
            })
            .collect();
        let mut client = client.clone();
        let request = pb::RegisterRequest { queue: "dlq".into(), agents, ..Default::default() };
        async move { client.register(request).await }
    });
    futures::stream::iter(registers).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    drain_with(&baton, "dlq", n, workers, batch, pb::Outcome::Transient).await?;
    slowlog_start(lab).await?;
    let source = || Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: "dlq".into() });
    let list = |token: String| {
        let mut admin = admin.clone();
        let request = pb::ListDeadLettersRequest { source: source(), page_size: 100, page_token: token };
        async move { Ok::<_, crate::lab::BoxError>(admin.list_dead_letters(request).await?.into_inner()) }
    };
    let first_page_ms = median_ms(20, || async {
        list(String::new()).await?;
        Ok(())
    })
    .await?;
    // 50 pages deep, then the page after.
    let mut token = String::new();
    for _ in 0..50 {
        token = list(token).await?.next_page_token;
    }
    let deep_page_ms = median_ms(20, || {
        let token = token.clone();
        let list = &list;
        async move {
            list(token).await?;
            Ok(())
        }
    })
    .await?;
    let mut ids = (0..40).map(|i| format!("dead-{:07}", i * (n / 40).max(1)));
    let retry_ms = median_ms(20, || {
        let (mut admin, id) = (admin.clone(), ids.next().unwrap_or_default());
        async move {
            admin.retry_dead_letter(pb::RetryDeadLetterRequest { source: source(), id }).await?;
            Ok(())
        }
    })
    .await?;
    let delete_ms = median_ms(20, || {
        let (mut admin, id) = (admin.clone(), ids.next().unwrap_or_default());
        async move {
            admin.delete_dead_letter(pb::DeleteDeadLetterRequest { source: source(), id }).await?;
            Ok(())
        }
    })
    .await?;
    let started = Instant::now();
    admin.purge(pb::PurgeRequest { dry_run: false }).await?;
    let purge_ms = started.elapsed().as_secs_f64() * 1000.0;
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    Ok((DeadLetterRow { n, first_page_ms, deep_page_ms, retry_ms, delete_ms, purge_ms }, slow))
}

pub struct SessionRow {
    pub n: usize,
    pub rss_per_stream_kb: f64,
    pub redis_clients: u64,
    pub idle_commands_per_s: f64,
    pub grant_p50_ms: f64,
    pub grant_p99_ms: f64,
}

async fn redis_info_field(lab: &mut Lab, section: &str, field: &str) -> Result<u64> {
    let info: String = redis::cmd("INFO").arg(section).query_async(&mut lab.conn).await?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("INFO {section} has no {field}"))?)
}

/// Redis commands run so far, but INFO's own.
async fn commands(lab: &mut Lab) -> Result<u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    Ok(info
        .lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum())
}

pub async fn sessions_step(lab: &mut Lab, n: usize, idle_seconds: u64) -> Result<(SessionRow, Slow)> {
    sessions_step_with(lab, n, idle_seconds, &[]).await
}

/// As [`sessions_step`], the `baton serve` process started with these environment variables.
pub async fn sessions_step_with(
    lab: &mut Lab,
    n: usize,
    idle_seconds: u64,
    env: &[(String, String)],
) -> Result<(SessionRow, Slow)> {
    lab.flush().await?;
    // Baton in a process of its own, so its memory is read apart from the streams' client ends.
    let baton = BatonProcess::start_with(&lab.url(), env).await?;
    let channels = baton.channels(64).await?;
    let mut client = agents(channels[0].clone());
    // The queue exists (one agent, due in an hour) so every session waits on it.
    let later = pb::Agent { name: "later".into(), interval: dur(3_600_000), ..Default::default() };
    client.register(pb::RegisterRequest { queue: "s".into(), agents: vec![later], ..Default::default() }).await?;
    slowlog_start(lab).await?;
    let rss_before = baton.rss_kb();
    let (granted_tx, mut granted) = mpsc::unbounded_channel::<Instant>();
    let opened = Arc::new(AtomicU64::new(0));
    let mut sessions = Vec::with_capacity(n);
    for i in 0..n {
        let mut client = agents(channels[i % channels.len()].clone());
        let (granted_tx, opened) = (granted_tx.clone(), opened.clone());
        sessions.push(tokio::spawn(async move {
            let (tx, rx) = mpsc::unbounded_channel();
            let open = pb::SessionOpen { queue: "s".into(), worker_id: format!("idle-{i}") };
            tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() })?;
            let mut stream =
                client.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
            opened.fetch_add(1, Ordering::Relaxed);
            while let Some(response) = stream.message().await? {
                for lease in response.leases {
                    let _ = granted_tx.send(Instant::now());
                    let completion = pb::SessionCompletion {
                        name: lease.name,
                        token: lease.token,
                        outcome: pb::Outcome::Success as i32,
                        ..Default::default()
                    };
                    tx.send(pb::SessionRequest { credit: 1, completions: vec![completion], ..Default::default() })?;
                }
            }
            Ok::<(), crate::lab::BoxError>(())
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while opened.load(Ordering::Relaxed) < n as u64 {
        if Instant::now() > deadline {
            return Err(format!("only {} of {n} sessions opened in 120 s", opened.load(Ordering::Relaxed)).into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Settled: every session has asked once and waits.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_per_stream_kb = baton.rss_kb().saturating_sub(rss_before) as f64 / n as f64;
    let redis_clients = redis_info_field(lab, "clients", "connected_clients").await?;
    let before = commands(lab).await?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(idle_seconds)).await;
    let idle_commands_per_s = commands(lab).await?.saturating_sub(before) as f64 / started.elapsed().as_secs_f64();
    // Register → grant through all those waiting sessions, one agent at a time.
    let mut h = histogram();
    for i in 0..20 {
        let agent = pb::Agent { name: format!("now-{i}"), ..Default::default() };
        let sent = Instant::now();
        client.register(pb::RegisterRequest { queue: "s".into(), agents: vec![agent], ..Default::default() }).await?;
        let at = tokio::time::timeout(Duration::from_secs(10), granted.recv())
            .await
            .map_err(|_| "no session was granted the registered agent within 10 s")?
            .ok_or("sessions ended")?;
        h.saturating_record(micros(at.saturating_duration_since(sent)));
    }
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    for s in sessions {
        s.abort();
    }
    let row = SessionRow {
        n,
        rss_per_stream_kb,
        redis_clients,
        idle_commands_per_s,
        grant_p50_ms: ms_at(&h, 0.5),
        grant_p99_ms: ms_at(&h, 0.99),
    };
    Ok((row, slow))
}
