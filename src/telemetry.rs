//! Logs (tracing, text or JSON), OpenTelemetry spans (`trace`) and Prometheus metrics on their
//! own port.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::{fmt, EnvFilter};

use crate::config::{Config, LogFormat};

use crate::trace;

use crate::error::{Error, Result};

/// Installs the global subscriber: logs to stderr and, when the `OTEL_*` variables ask for it,
/// spans over OTLP (`trace::pipeline`). Call once per process, inside the runtime; shut the
/// returned provider down at exit so the last spans are sent.
pub fn init_logs(config: &Config) -> Result<Option<SdkTracerProvider>> {
    use tracing_subscriber::{filter::Targets, layer::SubscriberExt, util::SubscriberInitExt, Layer};

    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log.level));
    // Spans meant for OpenTelemetry are not log lines.
    let filter = filter.add_directive(format!("{}=off", trace::TARGET).parse().expect("a valid directive"));
    // Colour codes only for a terminal: a log file or a collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
    let logs = match config.log.format {
        LogFormat::Text => logs.with_filter(filter).boxed(),
        LogFormat::Json => logs.json().flatten_event(true).with_filter(filter).boxed(),
    };
    let provider = trace::pipeline()?;
    let spans = provider.as_ref().map(|provider| {
        use opentelemetry::trace::TracerProvider;
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("baton"))
            .with_filter(Targets::new().with_target(trace::TARGET, tracing::Level::TRACE))
    });
    tracing_subscriber::registry().with(logs).with(spans).init();
    if provider.is_some() {
        tracing::info!("OpenTelemetry traces over OTLP/gRPC (OTEL_* variables)");
    }
    Ok(provider)
}

/// Installs the Prometheus recorder and its `/metrics` listener. Call once per process, inside
/// the runtime. An empty `metrics_listen` disables it.
pub fn init_metrics(config: &Config) -> Result<()> {
    if config.metrics_listen.is_empty() {
        return Ok(());
    }
    let addr: std::net::SocketAddr = config
        .metrics_listen
        .parse()
        .map_err(|e| Error::Config(format!("metrics_listen {:?}: {e}", config.metrics_listen)))?;
    let builder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("baton_rpc_duration_seconds".into()),
            &crate::rpc::latency::BOUNDS_SECONDS,
        )
        .map_err(|e| Error::Config(e.to_string()))?
        .set_buckets_for_metric(
            Matcher::Full("baton_long_poll_duration_seconds".into()),
            &crate::rpc::latency::BOUNDS_SECONDS,
        )
        .map_err(|e| Error::Config(e.to_string()))?
        // Histograms, not summaries: a summary's quantiles collapsed on a burst of 100,000
        // messages (bench/ measured every quantile at 1.83 s with a true mean of 0.83 s).
        .set_buckets_for_metric(
            Matcher::Full("baton_schedule_lateness_seconds".into()),
            &[0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0],
        )
        .map_err(|e| Error::Config(e.to_string()))?
        .set_buckets_for_metric(
            Matcher::Full("baton_claim_dispatch_seconds".into()),
            &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 300.0],
        )
        .map_err(|e| Error::Config(e.to_string()))?;
    serve(builder, addr, config)?;
    describe();
    metrics::gauge!("baton_build_info", &crate::build_info::BUILD.labels()).set(1.0);
    Ok(())
}

/// /metrics served by Baton itself, on a listener it binds (so the log says the bound address):
/// in plaintext, or over HTTPS (`tls.metrics`, with gRPC's certificate, reloaded like it), and
/// behind a bearer token when `metrics_token_sha256` is set.
fn serve(builder: PrometheusBuilder, addr: std::net::SocketAddr, config: &Config) -> Result<()> {
    let handle = builder.install_recorder().map_err(|e| Error::Config(format!("metrics recorder: {e}")))?;
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| Error::Config(format!("metrics listener on {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| Error::Config(e.to_string()))?;
    let token = (!config.metrics_token_sha256.is_empty()).then(|| config.metrics_token_sha256.to_ascii_lowercase());
    let upkeep = handle.clone();
    tokio::spawn(async move {
        // What the plain listener does by itself: drain histograms' buffers now and then.
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    if config.tls.metrics {
        let tls = crate::edge::tls::ServerTls::metrics(&config.tls)?;
        tracing::info!(addr = %bound, token = token.is_some(), "prometheus metrics at /metrics (TLS)");
        let stopping = tokio_util::sync::CancellationToken::new();
        tokio::spawn(crate::edge::tls::watch(tls.clone(), config.tls.reload_interval_ms, stopping.clone()));
        tokio::spawn(serve_connections(tls.incoming(listener, stopping), handle, token));
    } else {
        tracing::info!(addr = %bound, token = token.is_some(), "prometheus metrics at /metrics");
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(serve_connections(incoming, handle, token));
    }
    Ok(())
}

/// Answers GET /metrics on every connection of `incoming` (HTTP/1.1); with `token` (a SHA-256,
/// hex), only to `authorization: Bearer <token>` (401 otherwise).
async fn serve_connections<S>(
    mut incoming: impl tokio_stream::Stream<Item = std::io::Result<S>> + Unpin,
    handle: metrics_exporter_prometheus::PrometheusHandle,
    token: Option<String>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use http_body_util::Full;
    use hyper::{body::Bytes, service::service_fn, Response, StatusCode};

    let answer = |status: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        r
    };
    while let Some(accepted) = tokio_stream::StreamExt::next(&mut incoming).await {
        let Ok(stream) = accepted else { continue };
        let (handle, token) = (handle.clone(), token.clone());
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let presented = req
                .headers()
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, t)| crate::config::token_hash(t.trim()));
            let response = if token.is_some() && presented != token {
                let mut r = answer(StatusCode::UNAUTHORIZED, "metrics need \"authorization: Bearer <token>\"\n");
                r.headers_mut()
                    .insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
                r
            } else if req.uri().path() == "/metrics" {
                Response::new(Full::new(Bytes::from(handle.render())))
            } else {
                answer(StatusCode::NOT_FOUND, "not found; see /metrics\n")
            };
            async move { Ok::<_, std::convert::Infallible>(response) }
        });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await {
                tracing::debug!(error = %e, "metrics connection ended");
            }
        });
    }
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_histogram!("baton_rpc_duration_seconds", Unit::Seconds, "RPC latency by method and status code");
    describe_histogram!(
        "baton_long_poll_duration_seconds",
        Unit::Seconds,
        "Time of calls that asked to wait (Acquire, Claim, Campaign with a wait), by method and status code"
    );
    describe_counter!("baton_rpc_total", "RPCs by method and status code");
    describe_gauge!(
        "baton_build_info",
        "Always 1; the labels say which build runs: version, commit, rustc, target, profile"
    );
    describe_counter!("baton_agents_registered_total", "Agents created by Register");
    describe_counter!("baton_agents_acquired_total", "Leases granted by Acquire");
    describe_counter!("baton_agents_completed_total", "Completes by queue and outcome");
    describe_counter!("baton_agents_dead_lettered_total", "Agents moved to a dead-letter queue");
    describe_counter!("baton_agents_repaired_total", "Invalid waiting entries dropped by Acquire");
    describe_counter!("baton_leases_lost_total", "Calls that presented a lost lease, by RPC");
    describe_counter!(
        "baton_script_reloads_total",
        "Scripts or the function library loaded again after Redis lost them (NOSCRIPT, Function not found)"
    );
    describe_counter!("baton_script_eval_fallback_total", "Scripts run by EVAL after a failed reload (degraded)");
    describe_counter!("baton_script_errors_total", "Script calls that failed");
    describe_counter!("baton_leader_claimed_total", "Terms won by Campaign, by election");
    describe_counter!("baton_leader_refreshed_total", "Leaderships refreshed by Campaign or Renew, by election");
    describe_counter!("baton_leader_read_total", "Leadership checks (GetLeader, Campaign that lost), by election");
    describe_counter!("baton_leader_term_changes_total", "Terms begun or ended through this replica, by election");
    describe_gauge!("baton_leader_has_leader", "1 when the election had a leader at the last look, by election");
    describe_gauge!("baton_redis_up", "1 when the last Redis health check succeeded");
    describe_gauge!(
        "baton_redis_bulk_waiting",
        "Large script calls (batches of more than 8 items) waiting in Baton for a turn to go to Redis (limits.bulk_inflight)"
    );
}
