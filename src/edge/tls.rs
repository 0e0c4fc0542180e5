//! Serving over TLS (rustls, ring): gRPC, and /metrics when `tls.metrics` is set.
//!
//! The certificate, key and client CA are read into a rustls `ServerConfig` held in an
//! `ArcSwap`; every new connection's handshake uses the current one, so [`ServerTls::reload`]
//! (on SIGHUP or a changed file, see `server::reload`) changes what new connections see and
//! leaves established ones alone. A reload that fails (a half-written file) keeps the old
//! configuration and says why.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use arc_swap::ArcSwap;
use rustls_pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{rustls, server::TlsStream, TlsAcceptor};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use crate::{
    config::TlsConfig,
    error::{Error, Result},
};

/// Handshakes in progress at once; more connections wait in the accept queue. One peer holds
/// at most `tls.max_handshakes_per_peer` of them for up to `tls.hello_timeout_ms` each if it
/// sends nothing; beyond that, its connections must send their ClientHello at once.
const HANDSHAKES_AT_ONCE: usize = 256;

/// How long a connection beyond its address's `tls.max_handshakes_per_peer` may take to send
/// the first byte of its ClientHello: a real client sends it as soon as it is connected, so
/// clients behind one address (a NAT, an L4 load balancer) are served during a flood of silent
/// connections from that address, while each silent one beyond the share holds a slot this
/// long only.
const PROMPT_HELLO: Duration = Duration::from_millis(250);

/// The most often refused handshakes are logged (a warning with the count since the last).
const WARN_EVERY: Duration = Duration::from_secs(10);

/// A reloadable TLS server configuration.
pub(crate) struct ServerTls {
    files: TlsConfig,
    /// ALPN protocols offered: `h2` for gRPC, `http/1.1` for /metrics and for browsers and curl
    /// on the gRPC port (`web.rs`).
    alpn: Vec<Vec<u8>>,
    /// Whether to ask for (and require) client certificates.
    client_auth: bool,
    current: ArcSwap<rustls::ServerConfig>,
    /// Handshakes in progress per peer IP address.
    peers: Mutex<HashMap<IpAddr, usize>>,
    /// Refusals since the last warning, and when that was.
    refusals: Mutex<(u64, Option<Instant>)>,
}

/// Why a connection got no TLS session.
#[derive(Clone, Copy, Debug)]
enum Refusal {
    /// Too many handshakes from its address already (`tls.max_handshakes_per_peer`), and no
    /// ClientHello byte within `PROMPT_HELLO`.
    PeerLimit,
    /// No byte within `tls.hello_timeout_ms`, or closed before any.
    NoHello,
    /// Not done within `tls.handshake_timeout_ms`.
    Timeout,
    /// The handshake failed (not TLS, an unknown CA, no client certificate, ...).
    Failed,
}

impl Refusal {
    fn as_str(self) -> &'static str {
        match self {
            Refusal::PeerLimit => "peer_limit",
            Refusal::NoHello => "no_hello",
            Refusal::Timeout => "timeout",
            Refusal::Failed => "failed",
        }
    }
}

/// A handshake slot of one peer, given back on drop.
struct PeerSlot {
    tls: Arc<ServerTls>,
    ip: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut peers = self.tls.peers.lock().expect("not poisoned");
        if let Some(n) = peers.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                peers.remove(&self.ip);
            }
        }
    }
}

fn read_certs(field: &str, path: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| Error::Config(format!("{field} {path:?}: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Config(format!("{field} {path:?}: no PEM certificate in it")));
    }
    Ok(certs)
}

fn build(files: &TlsConfig, alpn: &[Vec<u8>], client_auth: bool) -> Result<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = read_certs("tls.cert_file", &files.cert_file)?;
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|e| Error::Config(format!("tls.key_file {:?}: {e}", files.key_file)))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS: {e}")))?;
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        for ca in read_certs("tls.client_ca_file", &files.client_ca_file)? {
            roots.add(ca).map_err(|e| Error::Config(format!("tls.client_ca_file {:?}: {e}", files.client_ca_file)))?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| Error::Config(format!("tls.client_ca_file {:?}: {e}", files.client_ca_file)))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| Error::Config(format!("tls.cert_file and tls.key_file do not make a certificate: {e}")))?;
    config.alpn_protocols = alpn.to_vec();
    Ok(config)
}

impl ServerTls {
    /// For gRPC: HTTP/2, and HTTP/1.1 after it when `http1` (gRPC-Web and JSON, see `web.rs`:
    /// a client offering both gets HTTP/2); client certificates required when
    /// `tls.client_ca_file` is set.
    pub(crate) fn grpc(files: &TlsConfig, http1: bool) -> Result<Arc<Self>> {
        let mut alpn = vec![b"h2".to_vec()];
        if http1 {
            alpn.push(b"http/1.1".to_vec());
        }
        Self::new(files, alpn, !files.client_ca_file.is_empty())
    }

    /// For /metrics: HTTP/1.1, no client certificates.
    pub(crate) fn metrics(files: &TlsConfig) -> Result<Arc<Self>> {
        Self::new(files, vec![b"http/1.1".to_vec()], false)
    }

    fn new(files: &TlsConfig, alpn: Vec<Vec<u8>>, client_auth: bool) -> Result<Arc<Self>> {
        let current = ArcSwap::from_pointee(build(files, &alpn, client_auth)?);
        let (peers, refusals) = (Mutex::default(), Mutex::default());
        Ok(Arc::new(Self { files: files.clone(), alpn, client_auth, current, peers, refusals }))
    }

    /// Reads the files again; new handshakes use them. On error the old ones stay.
    pub(crate) fn reload(&self) -> Result<()> {
        let config = build(&self.files, &self.alpn, self.client_auth)?;
        self.current.store(Arc::new(config));
        Ok(())
    }

    /// The files this configuration is read from.
    pub(crate) fn paths(&self) -> Vec<&Path> {
        [&self.files.cert_file, &self.files.key_file, &self.files.client_ca_file]
            .into_iter()
            .filter(|p| !p.is_empty())
            .map(Path::new)
            .collect()
    }

    fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.current.load_full())
    }

    /// A handshake slot for `ip`, unless it holds `tls.max_handshakes_per_peer` already.
    fn peer_slot(self: &Arc<Self>, ip: IpAddr) -> Option<PeerSlot> {
        let mut peers = self.peers.lock().expect("not poisoned");
        let n = peers.entry(ip).or_default();
        if *n >= self.files.max_handshakes_per_peer {
            return None;
        }
        *n += 1;
        Some(PeerSlot { tls: self.clone(), ip })
    }

    /// Counts a refusal (`baton_tls_handshakes_refused_total{reason}`) and warns, at most once
    /// per `WARN_EVERY`, with how many there were since the last warning.
    fn refused(&self, peer: SocketAddr, why: Refusal, error: Option<&std::io::Error>) {
        metrics::counter!("baton_tls_handshakes_refused_total", "reason" => why.as_str()).increment(1);
        tracing::debug!(%peer, reason = why.as_str(), error = error.map(tracing::field::display), "TLS handshake refused");
        let mut refusals = self.refusals.lock().expect("not poisoned");
        refusals.0 += 1;
        if refusals.1.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            tracing::warn!(
                %peer,
                reason = why.as_str(),
                error = error.map(tracing::field::display),
                refused = refusals.0,
                "TLS handshakes refused (silent, slow, failed, or too many at once from one address) since the \
                 last such warning; all are counted in baton_tls_handshakes_refused_total"
            );
            *refusals = (0, Some(Instant::now()));
        }
    }

    /// The TLS connections accepted on `listener` until `stopping`: each handshake runs in a
    /// task of its own, so a slow client holds up no other. A connection is dropped when it
    /// sends nothing within `tls.hello_timeout_ms` — within `PROMPT_HELLO` when its address
    /// already has `tls.max_handshakes_per_peer` handshakes in progress — or when its handshake
    /// takes longer than `tls.handshake_timeout_ms`.
    pub(crate) fn incoming(
        self: Arc<Self>,
        listener: TcpListener,
        stopping: CancellationToken,
    ) -> ReceiverStream<std::io::Result<TlsStream<TcpStream>>> {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES_AT_ONCE));
        let hello_limit = Duration::from_millis(self.files.hello_timeout_ms);
        let handshake_limit = Duration::from_millis(self.files.handshake_timeout_ms);
        tokio::spawn(async move {
            loop {
                let permit = tokio::select! {
                    _ = stopping.cancelled() => return,
                    permit = handshakes.clone().acquire_owned() => permit.expect("never closed"),
                };
                let (tcp, peer) = tokio::select! {
                    _ = stopping.cancelled() => return,
                    _ = tx.closed() => return,
                    accepted = listener.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            // Out of file descriptors and the like: pause rather than spin.
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                // Beyond its address's share, a connection is not refused at once: it must send
                // its ClientHello at once (a real client behind a shared address does).
                let slot = self.peer_slot(peer.ip());
                let (hello_within, silent) = match slot {
                    Some(_) => (hello_limit, Refusal::NoHello),
                    None => (hello_limit.min(PROMPT_HELLO), Refusal::PeerLimit),
                };
                let _ = tcp.set_nodelay(true);
                let (tls, tx) = (self.clone(), tx.clone());
                tokio::spawn(async move {
                    let _held = (permit, slot);
                    let started = Instant::now();
                    // A connection that never starts TLS gives its slot back soon.
                    match tokio::time::timeout(hello_within, tcp.peek(&mut [0u8; 1])).await {
                        Ok(Ok(n)) if n > 0 => {}
                        _ => return tls.refused(peer, silent, None),
                    }
                    let rest = handshake_limit.saturating_sub(started.elapsed());
                    match tokio::time::timeout(rest, tls.acceptor().accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send(Ok(stream)).await;
                        }
                        Ok(Err(e)) => tls.refused(peer, Refusal::Failed, Some(&e)),
                        Err(_) => tls.refused(peer, Refusal::Timeout, None),
                    }
                });
            }
        });
        ReceiverStream::new(rx)
    }
}

/// The modification times of `paths`: compared to see whether a file changed.
pub(crate) fn stamps(paths: &[std::path::PathBuf]) -> Vec<Option<std::time::SystemTime>> {
    paths.iter().map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()).collect()
}

/// Reloads `tls` on SIGHUP and whenever one of its files changed (checked every
/// `interval_ms`; 0: SIGHUP only), until `stopping`. For /metrics; gRPC's certificate is
/// reloaded with the tokens by `server`.
pub(crate) async fn watch(tls: Arc<ServerTls>, interval_ms: u64, stopping: CancellationToken) {
    let paths: Vec<std::path::PathBuf> = tls.paths().into_iter().map(Path::to_path_buf).collect();
    let mut seen = stamps(&paths);
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let interval = Duration::from_millis(interval_ms);
    loop {
        tokio::select! {
            _ = stopping.cancelled() => return,
            Some(()) = async { match hangup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => {}
            _ = async { if interval.is_zero() { std::future::pending().await } else { tokio::time::sleep(interval).await } } => {
                let now = stamps(&paths);
                if now == seen {
                    continue;
                }
                seen = now;
            }
        }
        match tls.reload() {
            Ok(()) => tracing::info!("metrics TLS certificate reloaded"),
            Err(e) => tracing::error!(error = %e, "metrics TLS reload failed; keeping the previous certificate"),
        }
    }
}
