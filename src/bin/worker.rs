//! `baton-worker`: an example worker. It takes agents from one queue, "works" on each for
//! `--work-ms` (or until its lease is lost), and completes it with SUCCESS; every lease it
//! acquires and every end is printed as a JSON line on stdout. SIGINT/SIGTERM release held
//! leases before exiting.

use std::time::Duration;

use baton::client::worker::Worker;
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(name = "baton-worker", about = "An example Baton worker")]
struct Args {
    /// Baton's gRPC address.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    addr: String,
    #[arg(long)]
    queue: String,
    #[arg(long)]
    worker_id: String,
    /// Leases held at once.
    #[arg(long, default_value_t = 1)]
    max_leases: u32,
    /// How long each run takes.
    #[arg(long, default_value_t = 1000)]
    work_ms: u64,
    /// How often held leases are extended (three beats within the server's default orphan
    /// threshold of 10 s).
    #[arg(long, default_value_t = 3_000)]
    heartbeat_ms: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args = Args::parse();
    let mut worker = Worker::connect(&args.addr, &args.queue, &args.worker_id).await?;
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
    worker
        .run(shutdown, move |lease, cancelled| async move {
            println!(r#"{{"event":"acquired","name":"{}","token":{}}}"#, lease.name, lease.token);
            tokio::select! {
                _ = tokio::time::sleep(work) => println!(r#"{{"event":"done","name":"{}","token":{}}}"#, lease.name, lease.token),
                _ = cancelled.cancelled() => println!(r#"{{"event":"cancelled","name":"{}","token":{}}}"#, lease.name, lease.token),
            }
            Ok(())
        })
        .await?;
    Ok(())
}
