//! security: the price of TLS and of TLS with an API token (with scopes checked on every
//! call), against plaintext in the same run: the same full cycles (Acquire N=1, then Complete
//! SUCCESS) by K workers, one connection each, against a fresh Baton per row on the same
//! private redis-server. Certificates come from `baton dev-certs`' generator.

use std::time::Duration;

use baton::{
    client::Client,
    config::{AuthConfig, TokenEntry},
};

use super::cycles::{cycle_phase, register};
use crate::lab::{bench_config, ms_at, Baton, Lab, Result};

pub struct SecurityArgs {
    pub workers: usize,
    pub seconds: u64,
    pub agents: u64,
}

/// How a row reaches Baton.
#[derive(Clone, Copy, PartialEq)]
enum Transport {
    Plain,
    Tls,
    TlsToken,
}

pub async fn run(lab: &mut Lab, args: &SecurityArgs) -> Result<()> {
    let dir = tempfile::Builder::new().prefix("baton-bench-certs").tempdir_in("/tmp")?;
    let certs = baton::tools::devcerts::generate(dir.path(), &["localhost".into()], "bench")?;
    let token = baton::config::new_token();
    let rows = [
        ("plaintext", Transport::Plain),
        ("TLS", Transport::Tls),
        ("TLS + token (worker role, scoped)", Transport::TlsToken),
    ];
    let mut results = Vec::new();
    for (name, transport) in rows {
        eprintln!("[security] {name}: K={} workers, {} s", args.workers, args.seconds);
        lab.flush().await?;
        let mut config = bench_config();
        if transport != Transport::Plain {
            config.tls.cert_file = certs.server_cert.display().to_string();
            config.tls.key_file = certs.server_key.display().to_string();
        }
        if transport == Transport::TlsToken {
            config.auth = AuthConfig {
                tokens: vec![TokenEntry {
                    name: "bench".into(),
                    sha256: baton::config::token_hash(&token),
                    roles: vec!["worker".into(), "producer".into()],
                    scopes: vec!["bench.*".into()],
                }],
                ..AuthConfig::default()
            };
        }
        let baton = Baton::start(&lab.url(), config).await?;
        let mut clients = Vec::with_capacity(args.workers);
        for _ in 0..args.workers {
            let client = match transport {
                Transport::Plain => Client::from(baton.channel().await?),
                _ => {
                    let b = Client::builder(format!("https://localhost:{}", baton.addr.port())).ca_file(&certs.ca);
                    let b = if transport == Transport::TlsToken { b.token(&token) } else { b };
                    connect(b).await?
                }
            };
            clients.push(client.agents());
        }
        register(&clients[0], "bench.cycle", args.agents, Some(1)).await?;
        let c = cycle_phase(&clients, "bench.cycle", 1, Duration::from_secs(args.seconds), lab.pid).await?;
        baton.stop().await?;
        results.push((name, c.per_sec, ms_at(&c.acquire, 0.5), ms_at(&c.acquire, 0.99)));
    }
    let plain = results[0].1;
    println!();
    println!(
        "Security: K={} workers (one connection each), Acquire(N=1)+Complete cycles, {} s each, same Redis",
        args.workers, args.seconds
    );
    println!("{:<36} {:>12} {:>12} {:>12} {:>12}", "transport", "cycles/s", "acq p50 ms", "acq p99 ms", "÷ plaintext");
    for (name, per_sec, p50, p99) in &results {
        println!("{name:<36} {per_sec:>12.0} {p50:>12.2} {p99:>12.2} {:>11.0}%", 100.0 * per_sec / plain);
    }
    Ok(())
}

/// Connects, retrying briefly while the server task reaches its accept loop.
async fn connect(builder: baton::client::ClientBuilder) -> Result<Client> {
    let mut attempts = 0;
    loop {
        match builder.clone().connect().await {
            Ok(c) => return Ok(c),
            Err(_) if attempts < 50 => attempts += 1,
            Err(e) => return Err(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
