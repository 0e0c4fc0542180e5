//! sessions: the scale scenario's idle Session stream step alone — N idle streams on one queue,
//! Baton's RSS per stream (`baton serve` in a process of its own) — for each variant of the
//! server's environment, interleaved over rounds so each variant meets the same machine.
//! A variant is `default` or `K=V` settings joined by `+` (`BATON_*` settings, or the
//! allocator's own variables; `bin=PATH` starts another `baton` binary, a build to compare with).

use super::scale_sources::sessions_step_with;
use crate::lab::{Lab, Result};

pub struct SessionsArgs {
    pub sizes: Vec<usize>,
    pub variants: Vec<String>,
    pub rounds: u32,
    pub idle_seconds: u64,
}

fn env_of(variant: &str) -> Result<Vec<(String, String)>> {
    if variant == "default" {
        return Ok(Vec::new());
    }
    variant
        .split('+')
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| format!("--sessions-variants: {kv:?} is not K=V").into())
        })
        .collect()
}

pub async fn run(lab: &mut Lab, args: &SessionsArgs) -> Result<()> {
    // (size, variant) -> KB per stream of each round.
    let mut rows: Vec<(usize, String, Vec<f64>, f64)> = Vec::new();
    for round in 1..=args.rounds {
        for &n in &args.sizes {
            for variant in &args.variants {
                eprintln!("[sessions] round {round}/{}: {n} streams, {variant}", args.rounds);
                let (row, _) = sessions_step_with(lab, n, args.idle_seconds, &env_of(variant)?).await?;
                match rows.iter_mut().find(|(m, v, _, _)| *m == n && v == variant) {
                    Some(r) => {
                        r.2.push(row.rss_per_stream_kb);
                        r.3 = r.3.max(row.grant_p99_ms);
                    }
                    None => rows.push((n, variant.clone(), vec![row.rss_per_stream_kb], row.grant_p99_ms)),
                }
            }
        }
    }
    println!();
    println!("Idle Session streams on one queue, 64 connections (RSS: `baton serve` alone, in a process of its own)");
    println!(
        "{:>9} {:<60} {:>16} {:>24} {:>18}",
        "streams", "variant", "KB/stream (mean)", "rounds", "grant p99 (worst)"
    );
    for (n, variant, kb, p99) in &rows {
        let mean = kb.iter().sum::<f64>() / kb.len() as f64;
        let each: Vec<String> = kb.iter().map(|k| format!("{k:.1}")).collect();
        println!("{:>9} {:<60} {:>16.1} {:>24} {:>15.2} ms", n, variant, mean, each.join(" "), p99);
    }
    crate::lab::print_load();
    Ok(())
}
