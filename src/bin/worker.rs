//! `baton-worker`: an example worker. It takes agents from one queue, "works" on each for
//! `--work-ms` (or until its lease is lost), and completes it with SUCCESS; every lease it
//! acquires and every end is printed as a JSON line on stdout. SIGINT/SIGTERM stop it
//! gracefully: runs that ended are completed, running ones cancelled and released. One thread,
//! so a signal is taken in between two steps of the worker: a run that printed `done` before
//! the signal is completed, never released.

use std::time::Duration;

use baton::client::{
    worker::{Failure, Steps, Worker},
    Client,
};
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(name = "baton-worker", about = "An example Baton worker")]
struct Args {
    /// Baton's gRPC address (host:port, http:// or https://).
    #[arg(long, default_value = "127.0.0.1:50051")]
    addr: String,
    #[arg(long)]
    queue: String,
    #[arg(long)]
    worker_id: String,
    /// Leases held at once.
    #[arg(long, default_value_t = 1)]
    max_leases: u32,
    /// How long each run takes (with --steps: each step).
    #[arg(long, default_value_t = 1000)]
    work_ms: u64,
    /// Runs in this many steps, `step-1` … `step-N`, each recorded (RecordStep) when done; a
    /// step a retried run's lease carries is skipped. Each step that starts is printed.
    #[arg(long, default_value_t = 0)]
    steps: u32,
    /// How often held leases are extended (three beats within the server's default orphan
    /// threshold of 10 s).
    #[arg(long, default_value_t = 3_000)]
    heartbeat_ms: u64,
    /// PEM CA of Baton's certificate (TLS; the address must be https://).
    #[arg(long)]
    ca_file: Option<String>,
    /// PEM client certificate, for mutual TLS (with --key-file).
    #[arg(long, requires = "key_file")]
    cert_file: Option<String>,
    /// PEM key of --cert-file.
    #[arg(long, requires = "cert_file")]
    key_file: Option<String>,
    /// API token, sent as `authorization: Bearer <token>`.
    #[arg(long, env = "BATON_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args = Args::parse();
    let mut client = Client::builder(&args.addr);
    if let Some(ca) = &args.ca_file {
        client = client.ca_file(ca);
    }
    if let (Some(cert), Some(key)) = (&args.cert_file, &args.key_file) {
        client = client.client_certificate(cert, key);
    }
    if let Some(token) = &args.token {
        client = client.token(token);
    }
    let client = client.connect().await?;
    let mut worker = Worker::new(&client, &args.queue, &args.worker_id);
    worker.max_leases = args.max_leases;
    worker.heartbeat_every = Duration::from_millis(args.heartbeat_ms);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
        tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = term.recv() => {} }
        stop.cancel();
    });
    let work = Duration::from_millis(args.work_ms);
    let (steps, recorder) = (args.steps, worker.steps());
    worker
        .run(shutdown, move |lease, cancelled| {
            let recorder = recorder.clone();
            async move {
            println!(r#"{{"event":"acquired","name":"{}","token":{}}}"#, lease.name, lease.token);
            for i in 1..=steps {
                let step = format!("step-{i}");
                if Steps::recorded(&lease, &step).is_some() {
                    continue;
                }
                println!(r#"{{"event":"step","name":"{}","token":{},"step":{i}}}"#, lease.name, lease.token);
                tokio::select! {
                    _ = tokio::time::sleep(work) => {}
                    _ = cancelled.cancelled() => return Ok(()),
                }
                recorder.record(&lease, &step, format!("result-{i}")).await.map_err(|e| Failure::transient(e.message()))?;
            }
            if steps > 0 {
                println!(r#"{{"event":"done","name":"{}","token":{}}}"#, lease.name, lease.token);
                return Ok(());
            }
            tokio::select! {
                _ = tokio::time::sleep(work) => println!(r#"{{"event":"done","name":"{}","token":{}}}"#, lease.name, lease.token),
                _ = cancelled.cancelled() => println!(r#"{{"event":"cancelled","name":"{}","token":{}}}"#, lease.name, lease.token),
            }
            Ok(())
            }
        })
        .await?;
    Ok(())
}
