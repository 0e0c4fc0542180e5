//! The `baton` binary: `baton serve` runs a replica; `baton config` prints the configuration a
//! `serve` with the same arguments would use; `token` and `dev-certs` make credentials; `version`
//! says which build this is; the operator commands (`probe`, `health`, `queues`, `agents`, `dlq`,
//! `purge`, `leaders`, `pools`, `pause`, `resume`) talk gRPC to a running Baton (`baton::cli`).

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use baton::{server, telemetry};

use baton::config::{Config, Fsync};

use baton::error::Error;

use baton::runtime::embedded;

use baton::runtime::embedded::Persistence;
use clap::{Args, Parser, Subcommand};
use figment::providers::Serialized;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

/// `baton --version`: the version and commit (`baton version` says more).
const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("BATON_BUILD_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "baton", version, long_version = LONG_VERSION, about = "Coordination service for polyglot worker fleets")]
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
    /// Make a new API token: prints it, and the configuration entry that holds its hash.
    Token(TokenArgs),
    /// Write a development CA, server and client certificates and an admin token into a
    /// directory, and print the configuration that uses them (not for production).
    DevCerts(DevCertsArgs),
    /// Print this binary's version, commit, compiler, target and profile.
    Version {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Operator commands against a running Baton (gRPC, with --addr, TLS and --token).
    #[command(flatten)]
    Operator(baton::tools::cli::Command),
}

#[derive(Args)]
struct TokenArgs {
    /// The identity the token stands for (logged and audited).
    #[arg(long)]
    name: String,
    /// worker, producer, read-only or admin (repeat for several).
    #[arg(long = "role", required = true)]
    roles: Vec<String>,
    /// Name patterns it may touch, e.g. billing.* or queue:billing.* (repeat; none: every name).
    #[arg(long = "scope")]
    scopes: Vec<String>,
}

#[derive(Args)]
struct DevCertsArgs {
    /// Where to write the files.
    #[arg(long, default_value = "baton-dev-certs")]
    dir: PathBuf,
    /// Names the server certificate is valid for (repeat).
    #[arg(long = "host", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string()])]
    hosts: Vec<String>,
    /// The client certificate's subject common name.
    #[arg(long, default_value = "dev-client")]
    client: String,
}

/// `baton token`: the token on the first line, then the entry to add.
fn token(args: TokenArgs) -> Result<(), Error> {
    let token = baton::config::new_token();
    let entry = baton::config::TokenEntry {
        name: args.name,
        sha256: baton::config::token_hash(&token),
        roles: args.roles,
        scopes: args.scopes,
    };
    // Checked like the configuration will check it.
    baton::rpc::auth::Identities::from_config(&baton::config::AuthConfig {
        tokens: vec![entry.clone()],
        ..Default::default()
    })?;
    #[derive(Serialize)]
    struct Entry {
        tokens: Vec<baton::config::TokenEntry>,
    }
    let toml = toml::to_string(&Entry { tokens: vec![entry] }).map_err(|e| Error::Internal(e.to_string()))?;
    println!("{token}");
    eprintln!(
        "# The token above is shown once and stored nowhere. Add this to auth.tokens_file (or as [[auth.tokens]]):"
    );
    print!("{toml}");
    Ok(())
}

/// `baton dev-certs`.
fn dev_certs(args: DevCertsArgs) -> Result<(), Error> {
    let made = baton::tools::devcerts::generate(&args.dir, &args.hosts, &args.client)?;
    let path = |p: &std::path::Path| p.display().to_string();
    println!("# Wrote a development CA, server and client certificates into {}.", args.dir.display());
    println!("# Admin token (stored nowhere else; its hash is in tokens.toml):");
    println!("#   {}", made.token);
    println!("# Configuration (baton.toml):");
    println!("[tls]\ncert_file = {:?}\nkey_file = {:?}", path(&made.server_cert), path(&made.server_key));
    println!("# client_ca_file = {:?}   # to require client certificates (mutual TLS)", path(&made.ca));
    println!("[auth]\ntokens_file = {:?}", path(&made.tokens_file));
    println!("# grpcurl -cacert {} -H 'authorization: Bearer {}' localhost:50051 list", path(&made.ca), made.token);
    Ok(())
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
        let config = Config::from_figment(figment)?;
        baton::server::check_config(&config)?;
        Ok(config)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Config(flags) => flags.config().and_then(|c| {
            if let Some(warning) = foreign_env_warning() {
                eprintln!("baton: {warning}");
            }
            print!("{}", toml::to_string(&c.redacted()).map_err(|e| Error::Internal(e.to_string()))?);
            Ok(())
        }),
        Command::Serve(flags) => flags.config().and_then(|c| serve(c, flags.config)),
        Command::Token(args) => token(args),
        Command::Version { json: false } => {
            println!("{}", baton::build_info::BUILD);
            Ok(())
        }
        Command::Version { json: true } => serde_json::to_string(&baton::build_info::BUILD)
            .map(|j| println!("{j}"))
            .map_err(|e| Error::Internal(e.to_string())),
        Command::DevCerts(args) => dev_certs(args),
        Command::Operator(command) => {
            let done = tokio::runtime::Runtime::new()
                .map_err(|e| e.to_string())
                .and_then(|runtime| runtime.block_on(baton::tools::cli::run(command)).map_err(|e| e.to_string()));
            return match done {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("baton: {e}");
                    ExitCode::FAILURE
                }
            };
        }
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

fn serve(config: Config, file: Option<PathBuf>) -> Result<(), Error> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| Error::Internal(e.to_string()))?;
    runtime.block_on(async move {
        // Inside the runtime: the OTLP exporter's channel needs it.
        let spans = telemetry::init_logs(&config)?;
        if let Some(warning) = foreign_env_warning() {
            tracing::warn!("{warning}");
        }
        for warning in config.readable_files_warnings(file.as_deref()) {
            tracing::warn!("{warning}");
        }
        let result = serve_in_runtime(config).await;
        if let Some(provider) = spans {
            // Sends the spans still batched; blocking, so off the runtime's threads.
            let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        }
        result
    })
}

async fn serve_in_runtime(config: Config) -> Result<(), Error> {
    telemetry::init_metrics(&config)?;
    let shutdown = CancellationToken::new();
    tokio::spawn(signal_shutdown(shutdown.clone()));
    // After a burst of streams opening, the allocator's free memory back to the system.
    tokio::spawn(baton::runtime::trim::run());

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
