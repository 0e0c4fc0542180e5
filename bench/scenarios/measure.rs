//! What the size scenarios share: Redis's memory, SLOWLOG per step and the machine's noise floor
//! in it, medians of repeated calls, and a drain by worker loops.

use std::collections::BTreeMap;

use baton::pb::{self, admin_service_client::AdminServiceClient};
use tokio::time::Instant;

use crate::lab::{agents, dur, histogram, micros, ms_at, Baton, Lab, Result};

/// Script name -> (worst µs, calls above 1 ms) of one step.
pub(super) type Slow = BTreeMap<String, (i64, u64)>;

pub(super) async fn used_memory(lab: &mut Lab) -> Result<u64> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(&mut lab.conn).await?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("INFO memory has no used_memory")?)
}

/// Starts logging script calls above 1 ms.
pub(super) async fn slowlog_start(lab: &mut Lab) -> Result<()> {
    for (k, v) in [("slowlog-max-len", "100000"), ("slowlog-log-slower-than", "1000")] {
        redis::cmd("CONFIG").arg("SET").arg(k).arg(v).query_async::<()>(&mut lab.conn).await?;
    }
    redis::cmd("SLOWLOG").arg("RESET").query_async::<()>(&mut lab.conn).await?;
    Ok(())
}

/// Every SLOWLOG entry since the last reset: (command or script name, µs).
pub(super) async fn slowlog_all(lab: &mut Lab) -> Result<Vec<(String, i64)>> {
    let log: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg("-1").query_async(&mut lab.conn).await?;
    let mut out = Vec::with_capacity(log.len());
    for entry in log {
        let Ok((_, _, us, args, _, _)) =
            redis::from_redis_value::<(i64, i64, i64, Vec<Vec<u8>>, Vec<u8>, Vec<u8>)>(entry)
        else {
            continue;
        };
        let text: Vec<String> = args.iter().take(2).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let name = baton::store::scripts::script_called(&text)
            .map_or_else(|| text.first().cloned().unwrap_or_default().to_lowercase(), str::to_string);
        out.push((name, us));
    }
    Ok(out)
}

/// Script name -> (worst µs, calls above 1 ms) since `slowlog_start`.
pub(super) async fn slowlog_read(lab: &mut Lab) -> Result<Slow> {
    let mut out = Slow::new();
    for (name, us) in slowlog_all(lab).await? {
        let e = out.entry(name).or_default();
        e.0 = e.0.max(us);
        e.1 += 1;
    }
    Ok(out)
}

/// Empties SLOWLOG (after a `slowlog_read`), so a long run reads it in parts and the log never
/// holds more than one part.
pub(super) async fn slowlog_reset(lab: &mut Lab) -> Result<()> {
    redis::cmd("SLOWLOG").arg("RESET").query_async::<()>(&mut lab.conn).await?;
    Ok(())
}

/// Stops logging (Redis's default threshold and length again).
pub(super) async fn slowlog_stop(lab: &mut Lab) -> Result<()> {
    for (k, v) in [("slowlog-log-slower-than", "10000"), ("slowlog-max-len", "128")] {
        redis::cmd("CONFIG").arg("SET").arg(k).arg(v).query_async::<()>(&mut lab.conn).await?;
    }
    slowlog_reset(lab).await
}

/// Adds one part of the log to what was read before.
pub(super) fn slow_merge(into: &mut Slow, part: Slow) {
    for (name, (us, calls)) in part {
        let e = into.entry(name).or_default();
        e.0 = e.0.max(us);
        e.1 += calls;
    }
}

/// Commands whose work does not depend on any size: one of them logged above 1 ms was not
/// working but waiting for a CPU (the machine's scheduling floor, not Redis's work).
const CONSTANT_TIME: [&str; 16] = [
    "incr",
    "incrby",
    "decr",
    "get",
    "set",
    "ping",
    "echo",
    "time",
    "hget",
    "exists",
    "zscore",
    "zcard",
    "scard",
    "llen",
    "hlen",
    "sismember",
];

/// The noise floor of a run: the slowest constant-time command SLOWLOG kept, and the slowest
/// script call beside it, in words.
pub(super) fn noise_floor(slow: &Slow) -> String {
    let worst = |pick: &dyn Fn(&str) -> bool| {
        slow.iter()
            .filter(|(name, _)| pick(name))
            .max_by_key(|(_, (us, _))| *us)
            .map(|(n, &(us, calls))| (n, us, calls))
    };
    let o1 = match worst(&|n| CONSTANT_TIME.contains(&n)) {
        Some((name, us, calls)) => format!("{name} {us} µs ({calls} such calls above 1 ms)"),
        None => "none above 1 ms".to_string(),
    };
    let script = match worst(&|n| !CONSTANT_TIME.contains(&n)) {
        Some((name, us, calls)) => format!("{name} {us} µs ({calls} calls above 1 ms)"),
        None => "none above 1 ms".to_string(),
    };
    format!("noise floor (SLOWLOG, threshold 1 ms): slowest constant-time command {o1}; slowest other call {script}")
}

/// Median of `calls` sequential calls of `f`, in ms.
pub(super) async fn median_ms<F, Fut>(calls: usize, mut f: F) -> Result<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let mut h = histogram();
    for _ in 0..calls {
        let started = Instant::now();
        f().await?;
        h.saturating_record(micros(started.elapsed()));
    }
    Ok(ms_at(&h, 0.5))
}

/// Median GetHealth latency over `calls` calls, in ms.
pub(super) async fn health_ms(admin: &AdminServiceClient<tonic::transport::Channel>, calls: usize) -> Result<f64> {
    median_ms(calls, || {
        let mut admin = admin.clone();
        async move {
            admin.get_health(pb::GetHealthRequest {}).await?;
            Ok(())
        }
    })
    .await
}

/// Drains `queue` with `workers` tasks (Acquire of `batch` + CompleteBatch) until `total` jobs
/// completed; jobs/s.
pub(super) async fn drain(baton: &Baton, queue: &str, total: u64, workers: usize, batch: u32) -> Result<f64> {
    drain_with(baton, queue, total, workers, batch, pb::Outcome::Success).await
}

/// As [`drain`], each lease ended with `outcome`.
pub(super) async fn drain_with(
    baton: &Baton,
    queue: &str,
    total: u64,
    workers: usize,
    batch: u32,
    outcome: pb::Outcome,
) -> Result<f64> {
    let channels = baton.channels(workers).await?;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = channels
        .into_iter()
        .enumerate()
        .map(|(w, channel)| {
            let done = done.clone();
            let queue = queue.to_string();
            tokio::spawn(async move {
                let mut client = agents(channel);
                let worker = format!("scale-{w}");
                while done.load(std::sync::atomic::Ordering::SeqCst) < total {
                    let request = pb::AcquireRequest {
                        queue: queue.clone(),
                        worker_id: worker.clone(),
                        max_leases: batch,
                        wait: dur(200),
                    };
                    let leases = client.acquire(request).await?.into_inner().leases;
                    if leases.is_empty() {
                        continue;
                    }
                    let completions = leases
                        .iter()
                        .map(|l| pb::CompleteRequest {
                            queue: l.queue.clone(),
                            name: l.name.clone(),
                            token: l.token,
                            outcome: outcome as i32,
                            ..Default::default()
                        })
                        .collect();
                    client.complete_batch(pb::CompleteBatchRequest { completions }).await?;
                    done.fetch_add(leases.len() as u64, std::sync::atomic::Ordering::SeqCst);
                }
                Ok::<(), tonic::Status>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}
