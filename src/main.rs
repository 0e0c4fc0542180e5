//! The `baton` binary: `baton serve` runs a replica; `baton config` prints the configuration a
//! `serve` with the same arguments would use.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use baton::{
    config::{Config, Fsync},
    embedded::{self, Persistence},
    error::Error,
    server, telemetry,
};
use clap::{Args, Parser, Subcommand};
use figment::providers::Serialized;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(name = "baton", version, about = "Coordination service for polyglot worker fleets")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a Baton replica.
    Serve(Flags),
    /// Print the effective configuration (defaults < TOML file < BATON_* < flags) as TOML.
    Config(Flags),
}

/// Flags override the TOML file and the environment.
#[derive(Args, Serialize)]
struct Flags {
    /// TOML configuration file.
    #[arg(long, env = "BATON_CONFIG")]
    #[serde(skip)]
    config: Option<PathBuf>,
    /// gRPC listen address [default: 127.0.0.1:50051].
    #[arg(long, env = "BATON_LISTEN")]
    #[serde(skip_serializing_if = "Option::is_none")]
    listen: Option<String>,
    /// Prometheus /metrics listen address; empty disables [default: 127.0.0.1:9464].
    #[arg(long, env = "BATON_METRICS_LISTEN")]
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics_listen: Option<String>,
    /// Redis URL (redis://host:port or redis+unix:///path); absent: the embedded default.
    #[arg(long, env = "BATON_REDIS_URL")]
    #[serde(skip_serializing_if = "Option::is_none")]
    redis_url: Option<String>,
    /// Directory of the embedded Redis's files [default: baton-data].
    #[arg(long, env = "BATON_DATA_DIR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    data_dir: Option<PathBuf>,
    /// Prefix of every Redis key [default: none].
    #[arg(long, env = "BATON_KEY_PREFIX")]
    #[serde(skip_serializing_if = "Option::is_none")]
    key_prefix: Option<String>,
}

impl Flags {
    fn config(&self) -> Result<Config, Error> {
        let figment = Config::figment(self.config.as_deref()).merge(Serialized::defaults(self));
        Config::from_figment(figment)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Config(flags) => flags.config().and_then(|c| {
            if let Some(warning) = foreign_env_warning() {
                eprintln!("baton: {warning}");
            }
            print!("{}", toml::to_string(&c).map_err(|e| Error::Internal(e.to_string()))?);
            Ok(())
        }),
        Command::Serve(flags) => flags.config().and_then(serve),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("baton: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One line naming the `BATON_*` variables that are not configuration (ignored), if any.
fn foreign_env_warning() -> Option<String> {
    let foreign = Config::foreign_env();
    (!foreign.is_empty()).then(|| {
        format!(
            "ignoring environment variables that are not Baton configuration \
             (Kubernetes service links, typos?): {}",
            foreign.join(", ")
        )
    })
}

fn serve(config: Config) -> Result<(), Error> {
    telemetry::init_logs(&config);
    if let Some(warning) = foreign_env_warning() {
        tracing::warn!("{warning}");
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Error::Internal(e.to_string()))?;
    runtime.block_on(async move {
        telemetry::init_metrics(&config)?;
        let shutdown = CancellationToken::new();
        tokio::spawn(signal_shutdown(shutdown.clone()));

        // The embedded Redis outlives the server, so the server can shut down against it.
        let redis_stop = CancellationToken::new();
        let (url, embedded) = match &config.redis_url {
            Some(url) => (url.clone(), None),
            None => {
                let persistence = match config.redis.embedded_fsync {
                    Fsync::Everysec => Persistence::EverySecond,
                    Fsync::Always => Persistence::Always,
                };
                let (url, task) = embedded::start_supervised(
                    config.redis.server_binary.clone(),
                    config.data_dir.clone(),
                    persistence,
                    redis_stop.clone(),
                )
                .await?;
                (url, Some(task))
            }
        };
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| Error::Config(format!("listen on {}: {e}", config.listen)))?;
        let result = server::run(Arc::new(config), &url, listener, shutdown.cancelled_owned()).await;
        redis_stop.cancel();
        if let Some(task) = embedded {
            let _ = task.await;
        }
        result
    })
}

/// Cancels `shutdown` on SIGINT or SIGTERM.
async fn signal_shutdown(shutdown: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
        _ = term.recv() => tracing::info!("SIGTERM received"),
    }
    shutdown.cancel();
}
