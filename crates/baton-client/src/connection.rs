//! [`Client`]: one connection to Baton shared by every helper, carrying the target, TLS (CA,
//! client certificate), an API token, HTTP/2 keepalive and a default deadline.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use baton_client::{worker::Worker, Client};
//! let client = Client::builder("https://baton.internal:50051")
//!     .ca_file("ca.pem")
//!     .token(std::env::var("BATON_TOKEN")?)
//!     .connect()
//!     .await?;
//! let worker = Worker::new(&client, "billing.invoices", "worker-1");
//! # Ok(()) }
//! ```

use std::{path::PathBuf, time::Duration};

#[cfg(feature = "tls")]
use tonic::transport::{Certificate, ClientTlsConfig, Identity};
use tonic::{
    metadata::{AsciiMetadataValue, MetadataValue},
    service::{interceptor::InterceptedService, Interceptor},
    transport::{Channel, Endpoint},
};

use super::CALL_TIMEOUT;
use crate::pb::{
    admin_service_client::AdminServiceClient, agent_service_client::AgentServiceClient,
    claim_service_client::ClaimServiceClient, leader_service_client::LeaderServiceClient,
    schedule_service_client::ScheduleServiceClient,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What every call through a [`Client`] carries: the token, a deadline when the call set none
/// (helpers set their own, long polls included), and the caller's trace context
/// (`traceparent`, see [`crate::otel`]).
#[derive(Clone, Debug, Default)]
pub struct CallDefaults {
    authorization: Option<AsciiMetadataValue>,
    timeout: Option<Duration>,
}

impl Interceptor for CallDefaults {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.authorization {
            req.metadata_mut().insert("authorization", value.clone());
        }
        if let Some(timeout) = self.timeout {
            if !req.metadata().contains_key("grpc-timeout") {
                req.set_timeout(timeout);
            }
        }
        crate::otel::inject(req.metadata_mut());
        Ok(req)
    }
}

/// The transport under every generated client a [`Client`] hands out.
pub type Conn = InterceptedService<Channel, CallDefaults>;

/// A connection to Baton. Cheap to clone; every clone shares the one HTTP/2 connection.
#[derive(Clone, Debug)]
pub struct Client {
    channel: Channel,
    defaults: CallDefaults,
}

/// Builds a [`Client`]: see [`Client::builder`].
#[derive(Clone, Debug)]
pub struct ClientBuilder {
    target: String,
    ca_file: Option<PathBuf>,
    identity: Option<(PathBuf, PathBuf)>,
    server_name: Option<String>,
    token: Option<String>,
    keepalive: Duration,
    keepalive_timeout: Duration,
    timeout: Duration,
    connect_timeout: Duration,
}

impl Client {
    /// A client of `target`: `http://host:port`, `https://host:port` for TLS, or `host:port`
    /// (TLS when a TLS option is set, as with `ca_file`; plaintext otherwise), as the other
    /// languages' clients and grpcurl accept it.
    pub fn builder(target: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            target: target.into(),
            ca_file: None,
            identity: None,
            server_name: None,
            token: None,
            keepalive: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            timeout: CALL_TIMEOUT,
            connect_timeout: Duration::from_secs(10),
        }
    }

    /// The channel itself (no token, no default deadline): for code that adds its own.
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    fn conn(&self) -> Conn {
        InterceptedService::new(self.channel.clone(), self.defaults.clone())
    }

    pub fn agents(&self) -> AgentServiceClient<Conn> {
        AgentServiceClient::new(self.conn())
    }

    pub fn claims(&self) -> ClaimServiceClient<Conn> {
        ClaimServiceClient::new(self.conn())
    }

    pub fn leaders(&self) -> LeaderServiceClient<Conn> {
        LeaderServiceClient::new(self.conn())
    }

    pub fn schedules(&self) -> ScheduleServiceClient<Conn> {
        ScheduleServiceClient::new(self.conn())
    }

    pub fn admin(&self) -> AdminServiceClient<Conn> {
        AdminServiceClient::new(self.conn())
    }
}

/// A plain channel (no token, no default deadline): what the helpers took before [`Client`].
impl From<Channel> for Client {
    fn from(channel: Channel) -> Self {
        Self { channel, defaults: CallDefaults::default() }
    }
}

impl From<&Client> for Client {
    fn from(client: &Client) -> Self {
        client.clone()
    }
}

impl ClientBuilder {
    /// PEM CA that signed Baton's certificate (TLS; without it, the system's roots).
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// PEM client certificate and key, for a Baton that requires them (mutual TLS).
    pub fn client_certificate(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.identity = Some((cert.into(), key.into()));
        self
    }

    /// The name Baton's certificate is checked against (default: the target's host).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// An API token, sent on every call as `authorization: Bearer <token>`.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// HTTP/2 pings every `interval` (also while idle), the connection dropped when one is not
    /// answered within `timeout`. Default: 30 s and 10 s.
    pub fn keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keepalive = interval;
        self.keepalive_timeout = timeout;
        self
    }

    /// The deadline of calls that set none (default 10 s; helpers set their own).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn endpoint(&self) -> Result<Endpoint, BoxError> {
        let tls_asked = self.ca_file.is_some() || self.identity.is_some() || self.server_name.is_some();
        let target = if self.target.contains("://") {
            self.target.clone()
        } else {
            format!("{}://{}", if tls_asked { "https" } else { "http" }, self.target)
        };
        let mut endpoint = Endpoint::from_shared(target.clone())
            .map_err(|e| {
                format!("target {:?}: {e} (expected host:port, http://host:port or https://host:port)", self.target)
            })?
            .connect_timeout(self.connect_timeout)
            .http2_keep_alive_interval(self.keepalive)
            .keep_alive_timeout(self.keepalive_timeout)
            .keep_alive_while_idle(true)
            .tcp_nodelay(true);
        if target.starts_with("https://") || tls_asked {
            if !target.starts_with("https://") {
                return Err(format!("TLS options need an https:// target, not {:?}", self.target).into());
            }
            endpoint = self.tls(endpoint)?;
        }
        Ok(endpoint)
    }

    #[cfg(feature = "tls")]
    fn tls(&self, endpoint: Endpoint) -> Result<Endpoint, BoxError> {
        let mut tls = ClientTlsConfig::new();
        tls = match &self.ca_file {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(read(ca)?)),
            None => tls.with_native_roots(),
        };
        if let Some((cert, key)) = &self.identity {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        if let Some(name) = &self.server_name {
            tls = tls.domain_name(name.clone());
        }
        Ok(endpoint.tls_config(tls)?)
    }

    #[cfg(not(feature = "tls"))]
    fn tls(&self, _: Endpoint) -> Result<Endpoint, BoxError> {
        Err("TLS needs baton-client's `tls` feature".into())
    }

    fn defaults(&self) -> Result<CallDefaults, BoxError> {
        let authorization = match &self.token {
            Some(token) => Some(
                MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| "the token must be printable ASCII")?,
            ),
            None => None,
        };
        Ok(CallDefaults { authorization, timeout: Some(self.timeout) })
    }

    /// Connects now; an unreachable Baton or a failed TLS handshake is an error.
    pub async fn connect(self) -> Result<Client, BoxError> {
        let defaults = self.defaults()?;
        let channel = self.endpoint()?.connect().await?;
        Ok(Client { channel, defaults })
    }

    /// Connects on first use (and again after a broken connection).
    pub fn connect_lazy(self) -> Result<Client, BoxError> {
        let defaults = self.defaults()?;
        Ok(Client { channel: self.endpoint()?.connect_lazy(), defaults })
    }
}

#[cfg(feature = "tls")]
fn read(path: &PathBuf) -> Result<Vec<u8>, BoxError> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    // A target without a scheme is accepted, as in every other language: plaintext, or TLS
    // once a TLS option is set.
    #[test]
    fn targets_with_and_without_a_scheme() {
        let uri = |b: ClientBuilder| b.endpoint().map(|e| e.uri().to_string());
        assert_eq!(uri(Client::builder("127.0.0.1:50051")).unwrap(), "http://127.0.0.1:50051/");
        assert_eq!(uri(Client::builder("localhost:50051")).unwrap(), "http://localhost:50051/");
        assert_eq!(uri(Client::builder("http://baton:50051")).unwrap(), "http://baton:50051/");
        assert!(uri(Client::builder("not a uri")).is_err());
        assert!(uri(Client::builder("http://baton:50051").server_name("baton")).is_err(), "TLS needs https");
    }
}
