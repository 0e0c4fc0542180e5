//! leader: failover and handover time of LeaderService.
//!
//! Failover, per round, on a fresh election: leader `a` campaigns with ttl T, candidate `b`
//! waits in Campaign(wait=30 s), `a` renews once 200 ms later and then stops (a dead leader
//! does nothing). `b` is elected when its wait notices the expiry. Figure: b's elected_at
//! (its term's expires_at − T, Redis clock) minus a's last expires_at (from the Renew reply):
//! how long the election had no leader after the term ran out.
//!
//! Handover, per round: `a` leads, `b` waits, `a` Resigns. Figure: b's elected_at minus
//! resigned_at (both Redis clock, whole ms), and on the client, b's reply minus the moment
//! the Resign was sent (Instants in this process, µs).

use std::time::Duration;

use baton::pb::{self, leader_service_client::LeaderServiceClient};
use tokio::time::Instant;
use tonic::transport::Channel;

use crate::lab::{bench_config, dur, histogram, micros, p50_p99_max, quantile_ms, ts_ms, Baton, BoxError, Lab, Result};

pub struct LeaderArgs {
    pub rounds: usize,
    pub ttl_ms: u64,
}

pub async fn run(lab: &mut Lab, args: &LeaderArgs) -> Result<()> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    // a and b are different processes: one connection each.
    let a = LeaderServiceClient::new(baton.channel().await?);
    let b = LeaderServiceClient::new(baton.channel().await?);

    eprintln!("[leader] failover: {} rounds of a {} ms term running out", args.rounds, args.ttl_ms);
    let mut failover_redis = Vec::new();
    let mut failover_client = histogram();
    for round in 0..args.rounds {
        let (redis_ms, client_us) =
            failover(lab, a.clone(), b.clone(), &format!("failover-{round}"), args.ttl_ms).await?;
        failover_redis.push(redis_ms);
        failover_client.saturating_record(client_us.max(0) as u64);
    }
    eprintln!("[leader] handover: {} rounds of Resign", args.rounds);
    let mut handover_redis = Vec::new();
    let mut handover_client = histogram();
    for round in 0..args.rounds {
        let (redis_ms, client) = handover(a.clone(), b.clone(), &format!("handover-{round}"), args.ttl_ms).await?;
        handover_redis.push(redis_ms);
        handover_client.saturating_record(micros(client));
    }
    baton.stop().await?;

    failover_redis.sort_unstable();
    handover_redis.sort_unstable();
    let redis =
        |v: &[i64]| format!("{} / {} / {}", quantile_ms(v, 0.5), quantile_ms(v, 0.99), v.last().copied().unwrap_or(0));
    println!();
    println!(
        "Leader failover and handover: ttl T = {} ms, {} rounds each; b waits in Campaign(wait=30s) while a leads",
        args.ttl_ms, args.rounds
    );
    println!("{:<44} {:>24} {:>24}", "", "Redis clock p50/p99/max", "client p50/p99/max");
    println!(
        "{:<44} {:>24} {:>24}",
        "failover: a's last expires_at → b elected",
        redis(&failover_redis),
        p50_p99_max(&failover_client)
    );
    println!(
        "{:<44} {:>24} {:>24}",
        "handover: a's Resign → b elected",
        redis(&handover_redis),
        p50_p99_max(&handover_client)
    );
    println!(
        "Latencies in ms. A dead leader's term lasts T = {} ms after its last renewal; failover adds the figure above to T.",
        args.ttl_ms
    );
    println!("Redis clock: b's elected_at (expires_at − T) minus a's expires_at (failover) or resigned_at (handover);");
    println!("  whole ms, as Baton's scripts read TIME. client: failover = b's reply received (this machine's clock");
    println!("  translated to Redis time) − a's expires_at; handover = b's reply − Resign sent (Instants, µs).");
    crate::lab::print_load();
    Ok(())
}

/// Returns (Redis-clock ms, client µs).
async fn failover(
    lab: &Lab,
    mut a: LeaderServiceClient<Channel>,
    b: LeaderServiceClient<Channel>,
    election: &str,
    ttl_ms: u64,
) -> Result<(i64, i64)> {
    let campaign = |candidate: &str, wait: u64| pb::CampaignRequest {
        election: election.into(),
        candidate_id: candidate.into(),
        ttl: dur(ttl_ms),
        wait: if wait > 0 { dur(wait) } else { None },
    };
    let won = a.campaign(campaign("a", 0)).await?.into_inner();
    if !won.is_leader {
        return Err(format!("leader: a did not win the fresh election {election}").into());
    }
    let clock = lab.clock;
    let waiting = {
        let (mut b, request) = (b.clone(), campaign("b", 30_000));
        tokio::spawn(async move {
            let reply = b.campaign(request).await?.into_inner();
            Ok::<_, BoxError>((reply, clock.now_us()))
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let renewed = a
        .renew(pb::RenewRequest { election: election.into(), candidate_id: "a".into(), token: won.token })
        .await?
        .into_inner();
    let last_expiry = ts_ms(&renewed.expires_at)?;
    // a is dead from here on.
    let (elected, received_us) = tokio::time::timeout(Duration::from_millis(ttl_ms) + Duration::from_secs(10), waiting)
        .await
        .map_err(|_| "leader: b was not elected within ttl + 10 s")???;
    if !elected.is_leader || elected.leader_id != "b" {
        return Err(format!("leader: b's wait ended without winning ({elected:?})").into());
    }
    let elected_at = ts_ms(&elected.expires_at)? - ttl_ms as i64;
    Ok((elected_at - last_expiry, received_us - last_expiry * 1000))
}

/// Returns (Redis-clock ms, client time from Resign sent to b's reply).
async fn handover(
    mut a: LeaderServiceClient<Channel>,
    b: LeaderServiceClient<Channel>,
    election: &str,
    ttl_ms: u64,
) -> Result<(i64, Duration)> {
    let campaign = |candidate: &str, wait: u64| pb::CampaignRequest {
        election: election.into(),
        candidate_id: candidate.into(),
        ttl: dur(ttl_ms),
        wait: if wait > 0 { dur(wait) } else { None },
    };
    let won = a.campaign(campaign("a", 0)).await?.into_inner();
    if !won.is_leader {
        return Err(format!("leader: a did not win the fresh election {election}").into());
    }
    let waiting = {
        let (mut b, request) = (b.clone(), campaign("b", 30_000));
        tokio::spawn(async move {
            let reply = b.campaign(request).await?.into_inner();
            Ok::<_, BoxError>((reply, Instant::now()))
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = Instant::now();
    let resigned = a
        .resign(pb::ResignRequest { election: election.into(), candidate_id: "a".into(), token: won.token })
        .await?
        .into_inner();
    let resigned_at = ts_ms(&resigned.resigned_at)?;
    let (elected, received) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .map_err(|_| "leader: b was not elected within 10 s of the resignation")???;
    if !elected.is_leader || elected.leader_id != "b" {
        return Err(format!("leader: b's wait ended without winning ({elected:?})").into());
    }
    let elected_at = ts_ms(&elected.expires_at)? - ttl_ms as i64;
    Ok((elected_at - resigned_at, received - sent))
}
