//! observe: Baton's resident memory under floods of LeaderService.Observe streams. Each round
//! opens N streams (on connections of 1,000 each, the default per-connection stream limit),
//! each on an election of its own, reads RSS with them open, closes them, and reads RSS again
//! after `settle` seconds (a replica drops a channel's subscription 30 s after its last waiter
//! left). Rounds use new election names, unless `same_names`; memory a flood leaves behind
//! shows as a climb from round to round. `baton serve` runs in a process of its own.

use std::time::Duration;

use baton::pb::{self, leader_service_client::LeaderServiceClient};

use crate::lab::{BatonProcess, Lab, Result};

pub struct ObserveArgs {
    pub streams: usize,
    pub rounds: u32,
    pub same_names: bool,
    pub settle_seconds: u64,
}

pub async fn run(lab: &mut Lab, args: &ObserveArgs) -> Result<()> {
    lab.flush().await?;
    let baton = BatonProcess::start_with(&lab.url(), &[]).await?;
    let baseline = baton.rss_kb();
    let connections = args.streams.div_ceil(1000);
    let mut rows = Vec::new();
    for round in 0..args.rounds {
        eprintln!("[observe] round {}/{}: {} streams", round + 1, args.rounds, args.streams);
        let channels = baton.channels(connections).await?;
        let names = if args.same_names { 0 } else { round };
        let opened = (0..args.streams).map(|i| {
            let mut leaders = LeaderServiceClient::new(channels[i / 1000].clone());
            async move {
                let election = format!("flood-{names}-{i}");
                let mut stream = leaders.observe(pb::ObserveRequest { election }).await?.into_inner();
                stream.message().await?.ok_or("an Observe stream ended before its first answer")?;
                Ok::<_, crate::lab::BoxError>(stream)
            }
        });
        let streams: Vec<_> = futures::future::try_join_all(opened).await?;
        let open_kb = baton.rss_kb();
        drop(streams);
        drop(channels);
        tokio::time::sleep(Duration::from_secs(args.settle_seconds)).await;
        rows.push((round + 1, open_kb, baton.rss_kb()));
    }
    baton.stop().await?;
    println!();
    println!(
        "Observe floods: {} streams a round, {} connections, {} names; RSS of `baton serve`, baseline {:.1} MiB",
        args.streams,
        connections,
        if args.same_names { "the same" } else { "new" },
        baseline as f64 / 1024.0
    );
    println!(
        "{:>6} {:>16} {:>14} {:>26}",
        "round",
        "open MiB",
        "KB/stream",
        format!("closed, {} s later MiB", args.settle_seconds)
    );
    for (round, open, closed) in rows {
        let per_stream = open.saturating_sub(baseline) as f64 / args.streams as f64;
        println!("{:>6} {:>16.1} {:>14.1} {:>26.1}", round, open as f64 / 1024.0, per_stream, closed as f64 / 1024.0);
    }
    crate::lab::print_load();
    Ok(())
}
