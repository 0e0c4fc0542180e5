//! blip: how long calls keep failing after Redis comes back from an outage, on the default
//! settings against the settings Baton shipped with before (breaker cooldown 30 s, no probe),
//! in the same run.
//!
//! A redis-server of its own (not the lab's, without persistence) serves a Baton; one client
//! calls ListAgents (which answers OK on an empty queue, so the lost data does not matter) every
//! `--blip-call-ms` (10). Redis is killed with SIGKILL, stays down for each of `--blip-outages-ms`,
//! and is started again on the same socket. The figures, on this process's clock: from the
//! moment a fresh connection of this process gets PONG from the new redis-server to the
//! client's first successful call, and to grpc.health.v1 answering SERVING again.

use std::time::Duration;

use baton::pb;

use baton::config::Config;

use baton::pb::agent_service_client::AgentServiceClient;

use baton::runtime::embedded::{Persistence, RedisProcess};
use tokio::time::Instant;
use tonic_health::pb::{health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest};

use super::idle::previous_defaults;
use crate::lab::{bench_config, Baton, Result};

pub struct BlipArgs {
    pub outages_ms: Vec<u64>,
    pub call_ms: u64,
}

struct Round {
    outage_ms: u64,
    settings: &'static str,
    /// Redis answers again → first successful call / SERVING again (ms).
    call_ms: f64,
    health_ms: f64,
    /// Calls answered CIRCUIT_OPEN after Redis was back.
    open_after: u64,
}

pub async fn run(args: &BlipArgs) -> Result<()> {
    let dir = tempfile::Builder::new().prefix("baton-blip").tempdir_in("/tmp")?;
    let mut rounds = Vec::new();
    for &outage_ms in &args.outages_ms {
        for (settings, config) in [("defaults", bench_config()), ("previous", previous_defaults(bench_config()))] {
            eprintln!("[blip] Redis down {outage_ms} ms, {settings} settings");
            rounds.push(one(dir.path(), config, settings, outage_ms, args.call_ms).await?);
        }
    }
    println!();
    println!(
        "Recovery after a Redis outage: redis-server SIGKILLed, down for the outage, restarted; one client calls ListAgents \
         every {} ms. Figures from the moment Redis answers PING again.",
        args.call_ms
    );
    println!(
        "{:>10} {:>10} {:>22} {:>22} {:>22}",
        "outage ms", "settings", "→ first OK call (ms)", "→ health SERVING (ms)", "CIRCUIT_OPEN after up"
    );
    for r in &rounds {
        println!(
            "{:>10} {:>10} {:>22.0} {:>22.0} {:>22}",
            r.outage_ms, r.settings, r.call_ms, r.health_ms, r.open_after
        );
    }
    let d = Config::default().circuit_breaker;
    println!(
        "defaults: breaker probe every {} ms (its first answer closes the breaker), cooldown {} ms; previous: cooldown 30,000 \
         ms, no probe. Goal: calls succeed within 2,000 ms of Redis answering.",
        d.probe_interval_ms, d.cooldown_ms
    );
    crate::lab::print_load();
    Ok(())
}

async fn one(
    dir: &std::path::Path,
    config: Config,
    settings: &'static str,
    outage_ms: u64,
    call_ms: u64,
) -> Result<Round> {
    let redis = RedisProcess::start("redis-server", dir, Persistence::None).await?;
    let url = redis.url();
    let baton = Baton::start(&url, config).await?;
    let channel = baton.channel().await?;
    let client = AgentServiceClient::new(channel.clone());
    let mut health = HealthClient::new(channel.clone());

    let caller = {
        let mut client = client.clone();
        tokio::spawn(async move {
            let mut log: Vec<(Instant, std::result::Result<(), String>)> = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(call_ms));
            let stop = Instant::now() + Duration::from_secs(120);
            while Instant::now() < stop {
                tick.tick().await;
                let req = pb::ListAgentsRequest { queue: "blip".into(), ..Default::default() };
                let answer = client.list_agents(req).await.map(drop).map_err(|s| {
                    use tonic_types::StatusExt;
                    s.get_details_error_info().map(|i| i.reason).unwrap_or_default()
                });
                let ok = answer.is_ok();
                log.push((Instant::now(), answer));
                // Done once calls succeed again after the outage.
                if ok && log.iter().any(|(_, r)| r.is_err()) {
                    break;
                }
            }
            log
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.kill().await;
    tokio::time::sleep(Duration::from_millis(outage_ms)).await;
    let redis = RedisProcess::start("redis-server", dir, Persistence::None).await?;
    // Up: a fresh connection of this process gets PONG.
    let up = loop {
        if let Ok(mut conn) = redis::Client::open(url.clone())?.get_multiplexed_async_connection().await {
            if redis::cmd("PING").query_async::<String>(&mut conn).await.is_ok() {
                break Instant::now();
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let serving = loop {
        let status = health.check(HealthCheckRequest { service: String::new() }).await?.into_inner().status();
        if status == ServingStatus::Serving {
            break Instant::now();
        }
        if up.elapsed() > Duration::from_secs(120) {
            return Err("blip: health never SERVING again".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let log = caller.await?;
    let first_ok = log
        .iter()
        .find(|(at, r)| *at > up && r.is_ok())
        .map(|(at, _)| *at)
        .ok_or("blip: no call succeeded within 120 s")?;
    let open_after =
        log.iter().filter(|(at, r)| *at > up && matches!(r, Err(reason) if reason == "CIRCUIT_OPEN")).count();
    baton.stop().await?;
    redis.kill().await;
    let ms = |t: Instant| t.saturating_duration_since(up).as_secs_f64() * 1000.0;
    Ok(Round { outage_ms, settings, call_ms: ms(first_ok), health_ms: ms(serving), open_after: open_after as u64 })
}
