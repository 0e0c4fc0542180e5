//! Who may call what. Callers are identified by an API token (`authorization: Bearer …`,
//! looked up by its SHA-256) or by their TLS client certificate's subject common name; each
//! identity has roles (what it may do) and scopes (which names it may touch).
//!
//! Enforced in two steps, both here:
//! - [`AuthLayer`], a tower layer over every gRPC service (streams included): authenticates
//!   the caller and checks the role the method needs ([`permission`]), before any handler runs;
//! - [`Scoped`]: every request names the queues, pools, receivers and elections it touches;
//!   [`authorize`] checks them against the identity's scopes at the top of each handler.
//!   Listings (dead letters, health, purge) are filtered by [`Identity::sees`].
//!
//! With no token and no certificate identity configured, authentication is off: every call
//! passes and no identity is attached.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use arc_swap::ArcSwap;
use futures::{future::BoxFuture, Stream, StreamExt};
use tokio::sync::watch;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};

use crate::{
    config::{token_hash, AuthConfig, TokenEntry},
    error::{Error, Result},
};

/// What a method needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Hold and end work: Acquire, Heartbeat, Complete, Release, Claim, Return, Fail,
    /// Subscribe, Ack, Campaign, Renew, Resign.
    Work,
    /// Create and remove work: Register, Unregister, CancelRun, Offer, Schedule, Cancel.
    Produce,
    /// Look: Get*, List*, Watch*, Observe, Await, GetHealth.
    Read,
    /// Change what an operator changes: Retry/DeleteDeadLetter, Purge, SetLimits,
    /// SetKeyLimits, SetGroupLimits, RecountKeys, Pause, Resume; and anything unknown.
    Admin,
}

impl Permission {
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Work => "work",
            Permission::Produce => "produce",
            Permission::Read => "read",
            Permission::Admin => "admin",
        }
    }
}

/// A role: a set of permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Worker,
    Producer,
    ReadOnly,
    Admin,
}

impl Role {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "worker" => Role::Worker,
            "producer" => Role::Producer,
            "read-only" => Role::ReadOnly,
            "admin" => Role::Admin,
            _ => return None,
        })
    }

    fn grants(self, p: Permission) -> bool {
        match self {
            Role::Admin => true,
            Role::Worker => matches!(p, Permission::Work | Permission::Read),
            Role::Producer => matches!(p, Permission::Produce | Permission::Read),
            Role::ReadOnly => p == Permission::Read,
        }
    }
}

/// The kinds of names a scope may be limited to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    Queue,
    Pool,
    Receiver,
    Election,
    /// A shared concurrency group (SetGroupLimits; `QueueLimits.group`).
    Group,
}

impl NameKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NameKind::Queue => "queue",
            NameKind::Pool => "pool",
            NameKind::Receiver => "receiver",
            NameKind::Election => "election",
            NameKind::Group => "group",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [NameKind::Queue, NameKind::Pool, NameKind::Receiver, NameKind::Election, NameKind::Group]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

impl From<crate::store::SourceKind> for NameKind {
    fn from(kind: crate::store::SourceKind) -> Self {
        match kind {
            crate::store::SourceKind::Queue => NameKind::Queue,
            crate::store::SourceKind::Pool => NameKind::Pool,
            crate::store::SourceKind::Receiver => NameKind::Receiver,
        }
    }
}

/// One scope: a glob over names (`billing.*`), optionally of one kind (`queue:billing.*`).
#[derive(Clone, Debug)]
struct Scope {
    kind: Option<NameKind>,
    pattern: glob::Pattern,
}

impl Scope {
    fn parse(s: &str) -> std::result::Result<Self, String> {
        let (kind, pattern) = match s.split_once(':') {
            Some((kind, pattern)) => (
                Some(
                    NameKind::parse(kind)
                        .ok_or_else(|| format!("{kind:?} is not queue, pool, receiver, election or group"))?,
                ),
                pattern,
            ),
            None => (None, s),
        };
        if pattern.is_empty() {
            return Err("an empty pattern".into());
        }
        let pattern = glob::Pattern::new(pattern).map_err(|e| e.to_string())?;
        Ok(Self { kind, pattern })
    }

    fn admits(&self, kind: NameKind, name: &str) -> bool {
        self.kind.is_none_or(|k| k == kind) && self.pattern.matches(name)
    }
}

/// How a caller proved who it is: the key it is found by again after a reload.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Credential {
    /// A token's SHA-256 (lowercase hex).
    Token(String),
    /// A client certificate's subject common name.
    Certificate(String),
}

/// An authenticated caller.
#[derive(Debug)]
pub struct Identity {
    /// As logged and audited: the token's name, or the certificate's common name.
    pub name: String,
    credential: Credential,
    roles: Vec<Role>,
    /// Empty: every name.
    scopes: Vec<Scope>,
}

impl Identity {
    pub fn may(&self, p: Permission) -> bool {
        self.roles.iter().any(|r| r.grants(p))
    }

    /// Whether this identity is limited to some names (it has scopes).
    pub fn scoped(&self) -> bool {
        !self.scopes.is_empty()
    }

    /// Whether this identity may see or touch `name`.
    pub fn sees(&self, kind: NameKind, name: &str) -> bool {
        // A sharded source's physical names (`hot#2`) belong to the source.
        let name = crate::store::shards::logical(name);
        self.scopes.is_empty() || self.scopes.iter().any(|s| s.admits(kind, name))
    }

    fn parse(name: &str, credential: Credential, roles: &[String], scopes: &[String], what: &str) -> Result<Self> {
        let bad = |why: String| Error::Config(format!("{what} {name:?}: {why}"));
        if name.is_empty() {
            return Err(Error::Config(format!("{what}: every entry needs a name")));
        }
        if roles.is_empty() {
            return Err(bad("has no roles (worker, producer, read-only, admin)".into()));
        }
        let roles = roles
            .iter()
            .map(|r| {
                Role::parse(r).ok_or_else(|| bad(format!("role {r:?} is not worker, producer, read-only or admin")))
            })
            .collect::<Result<_>>()?;
        let scopes = scopes
            .iter()
            .map(|s| Scope::parse(s).map_err(|e| bad(format!("scope {s:?}: {e}"))))
            .collect::<Result<_>>()?;
        Ok(Self { name: name.to_string(), credential, roles, scopes })
    }
}

/// The identities a replica knows, from `auth.*`.
#[derive(Debug, Default)]
pub struct Identities {
    enabled: bool,
    open_health: bool,
    tokens: HashMap<String, Arc<Identity>>,
    certificates: HashMap<String, Arc<Identity>>,
}

/// The tokens file's shape: `[[tokens]]` entries.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    tokens: Vec<TokenEntry>,
}

impl Identities {
    /// Reads `auth.*` (and the tokens file); a bad entry is a configuration error naming it.
    pub fn from_config(config: &AuthConfig) -> Result<Self> {
        let mut entries = config.tokens.clone();
        if !config.tokens_file.is_empty() {
            let text = std::fs::read_to_string(&config.tokens_file)
                .map_err(|e| Error::Config(format!("auth.tokens_file {:?}: {e}", config.tokens_file)))?;
            let file: TokensFile = toml::from_str(&text)
                .map_err(|e| Error::Config(format!("auth.tokens_file {:?}: {e}", config.tokens_file)))?;
            entries.extend(file.tokens);
        }
        let mut tokens = HashMap::new();
        for t in &entries {
            let hash = t.sha256.to_ascii_lowercase();
            let identity =
                Identity::parse(&t.name, Credential::Token(hash.clone()), &t.roles, &t.scopes, "auth.tokens")?;
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::Config(format!(
                    "auth.tokens {:?}: sha256 must be 64 hex digits (`baton token` prints one)",
                    t.name
                )));
            }
            if tokens.insert(hash, Arc::new(identity)).is_some() {
                return Err(Error::Config(format!("auth.tokens {:?}: the same token is listed twice", t.name)));
            }
        }
        let mut certificates = HashMap::new();
        for c in &config.certificates {
            let credential = Credential::Certificate(c.common_name.clone());
            let identity = Identity::parse(&c.common_name, credential, &c.roles, &c.scopes, "auth.certificates")?;
            certificates.insert(c.common_name.clone(), Arc::new(identity));
        }
        Ok(Self { enabled: config.enabled(), open_health: config.open_health, tokens, certificates })
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The identity a credential stands for now.
    fn find(&self, credential: &Credential) -> Option<&Arc<Identity>> {
        match credential {
            Credential::Token(hash) => self.tokens.get(hash),
            Credential::Certificate(common_name) => self.certificates.get(common_name),
        }
    }

    /// Who is calling, from the request's `authorization` header or client certificate.
    fn authenticate<B>(&self, req: &http::Request<B>) -> Result<Arc<Identity>> {
        if let Some(value) = req.headers().get(http::header::AUTHORIZATION) {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| v.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, token)| token.trim())
                .ok_or_else(|| Error::Unauthenticated("the authorization header must be \"Bearer <token>\"".into()))?;
            return self
                .tokens
                .get(&token_hash(token))
                .cloned()
                .ok_or_else(|| Error::Unauthenticated("the token is not recognised".into()));
        }
        if let Some(common_name) = client_common_name(req) {
            return self.certificates.get(&common_name).cloned().ok_or_else(|| {
                Error::Unauthenticated(format!(
                    "the client certificate {common_name:?} is not an identity (auth.certificates)"
                ))
            });
        }
        Err(Error::Unauthenticated("no credentials: send the metadata \"authorization: Bearer <token>\"".into()))
    }

    /// Authenticates `req` and checks the permission its method needs; the identity to attach
    /// (None: authentication is off, or the method is open).
    pub fn check<B>(&self, req: &http::Request<B>) -> Result<Option<Arc<Identity>>> {
        if !self.enabled {
            return Ok(None);
        }
        let path = req.uri().path();
        let needed = match permission(path) {
            Some(p) => p,
            None if self.open_health => return Ok(None),
            None => Permission::Read,
        };
        let identity = self.authenticate(req)?;
        if !identity.may(needed) {
            return Err(Error::PermissionDenied {
                permission: needed.as_str().into(),
                message: format!(
                    "{:?} may not call {path}: it needs the {} permission",
                    identity.name,
                    needed.as_str()
                ),
            });
        }
        Ok(Some(identity))
    }
}

/// The subject common name of the client certificate, if the caller presented one.
fn client_common_name<B>(req: &http::Request<B>) -> Option<String> {
    let info = req.extensions().get::<TlsConnectInfo<TcpConnectInfo>>()?;
    let certs = info.peer_certs()?;
    let (_, cert) = x509_parser::parse_x509_certificate(certs.first()?.as_ref()).ok()?;
    let cn = cert.subject().iter_common_name().next()?.as_str().ok()?.to_string();
    Some(cn)
}

/// The permission a gRPC method needs; None for the standard services (health, reflection),
/// open when `auth.open_health`.
pub fn permission(path: &str) -> Option<Permission> {
    let (service, method) = path.trim_start_matches('/').split_once('/').unwrap_or((path, ""));
    use Permission::*;
    Some(match (service, method) {
        (
            "baton.v1.AgentService",
            "Register" | "Unregister" | "CancelRun" | "RegisterBatch" | "CloseBatch" | "Signal",
        ) => Produce,
        (
            "baton.v1.AgentService",
            "Acquire" | "Heartbeat" | "Complete" | "CompleteBatch" | "Release" | "Session" | "RecordStep",
        ) => Work,
        ("baton.v1.AgentService", "GetAgent" | "ListAgents" | "Await" | "GetBatch" | "WatchAgent") => Read,
        ("baton.v1.ClaimService", "Offer") => Produce,
        ("baton.v1.ClaimService", "Claim" | "Return" | "Fail") => Work,
        ("baton.v1.ClaimService", "GetPool" | "WatchPool") => Read,
        ("baton.v1.LeaderService", "Campaign" | "Renew" | "Resign") => Work,
        ("baton.v1.LeaderService", "GetLeader" | "Observe" | "ListElections" | "GetElectionHistory") => Read,
        ("baton.v1.ScheduleService", "Schedule" | "ScheduleBatch" | "Cancel") => Produce,
        ("baton.v1.ScheduleService", "Subscribe" | "Receive" | "Ack" | "AckBatch") => Work,
        ("baton.v1.ScheduleService", "ListMessages") => Read,
        (
            "baton.v1.AdminService",
            "GetHealth" | "ListDeadLetters" | "GetKeyLimits" | "ListKeyLimits" | "GetGroupLimits" | "ListGroupLimits",
        ) => Read,
        // KEDA's external scaler reads backlogs; KEDA sends no token, so with authentication
        // on it presents a client certificate mapped to a read-only identity.
        ("externalscaler.ExternalScaler", _) => Read,
        ("grpc.health.v1.Health", _)
        | ("grpc.reflection.v1.ServerReflection", _)
        | ("grpc.reflection.v1alpha.ServerReflection", _) => return None,
        _ => Admin,
    })
}

/// The method `path` names, as a metric label: a method of a service this server serves
/// (Baton's, KEDA's scaler, grpc.health.v1), or "unknown". The labels come from this closed
/// set, so a caller cannot add series to /metrics by calling made-up paths.
pub fn method_label(path: &str) -> &'static str {
    static KNOWN: std::sync::OnceLock<HashMap<String, String>> = std::sync::OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        let mut pool = prost_reflect::DescriptorPool::global();
        for set in
            [crate::pb::FILE_DESCRIPTOR_SET, crate::keda_pb::FILE_DESCRIPTOR_SET, tonic_health::pb::FILE_DESCRIPTOR_SET]
        {
            if let Err(e) = pool.decode_file_descriptor_set(set) {
                tracing::error!(error = %e, "descriptor set: refused calls are counted as method \"unknown\"");
            }
        }
        pool.services()
            .flat_map(|s| {
                let service = s.full_name().to_string();
                s.methods().map(|m| (format!("/{service}/{}", m.name()), m.name().to_string())).collect::<Vec<_>>()
            })
            .collect()
    });
    known.get(path).map_or("unknown", String::as_str)
}

/// What a request names: checked against the caller's scopes by [`authorize`].
pub trait Scoped {
    /// Every (kind, name) the request touches.
    fn names(&self) -> Vec<(NameKind, &str)>;
}

/// The caller's identity (None: authentication is off), once every name `request` touches is
/// within its scopes; PERMISSION_DENIED naming the first that is not.
pub fn authorize<T: Scoped>(request: &tonic::Request<T>) -> Result<Option<Arc<Identity>>> {
    let identity = identity(request);
    authorize_as(&identity, request.get_ref())?;
    Ok(identity)
}

/// Checks every name `message` touches against the scopes of `identity` (None: authentication
/// is off): for the messages of a stream after its first, which the call's `authorize` did not
/// see. PERMISSION_DENIED naming the first name outside them.
pub fn authorize_as(identity: &Option<Arc<Identity>>, message: &impl Scoped) -> Result<()> {
    let Some(identity) = identity else { return Ok(()) };
    within_scopes(identity, message.names())
}

/// PERMISSION_DENIED naming the first of `names` outside the scopes of `identity`.
fn within_scopes<'a>(identity: &Identity, names: impl IntoIterator<Item = (NameKind, &'a str)>) -> Result<()> {
    for (kind, name) in names {
        if !identity.sees(kind, name) {
            return Err(Error::PermissionDenied {
                permission: format!("{}:{name}", kind.as_str()),
                message: format!("{:?} may not use {} {name:?} (outside its scopes)", identity.name, kind.as_str()),
            });
        }
    }
    Ok(())
}

/// The caller's identity, if any, for filtering listings and audit lines.
pub fn identity<T>(request: &tonic::Request<T>) -> Option<Arc<Identity>> {
    request.extensions().get::<Arc<Identity>>().cloned()
}

/// Whether `identity` (None: authentication off) may see `name`.
pub fn sees(identity: &Option<Arc<Identity>>, kind: NameKind, name: &str) -> bool {
    identity.as_ref().is_none_or(|i| i.sees(kind, name))
}

/// The name an audit line gives the caller.
pub fn who(identity: &Option<Arc<Identity>>) -> &str {
    identity.as_ref().map_or("anonymous", |i| i.name.as_str())
}

/// The identities in force, swapped whole by a reload (the tokens file, SIGHUP); every call in
/// progress is told of each reload through its [`Grant`].
pub struct Keyring {
    current: ArcSwap<Identities>,
    /// Counts reloads; a grant's receiver wakes on each.
    reloads: watch::Sender<u64>,
}

impl Keyring {
    pub fn new(identities: Identities) -> Arc<Self> {
        Arc::new(Self { current: ArcSwap::from_pointee(identities), reloads: watch::channel(0).0 })
    }

    pub fn load(&self) -> arc_swap::Guard<Arc<Identities>> {
        self.current.load()
    }

    /// Puts `identities` in force: new calls use them, and every call in progress checks its
    /// grant against them.
    pub fn store(&self, identities: Identities) {
        self.current.store(Arc::new(identities));
        self.reloads.send_modify(|n| *n += 1);
    }
}

/// What a call was let in with: the caller's credential, the permission its method needs, and
/// (for a stream, once its first message named them) the names it touches. A call that outlives
/// a reload — a stream, a long poll — is checked against the new identities: one whose
/// credential is gone ends UNAUTHENTICATED, one that lost the permission or a name's scope
/// PERMISSION_DENIED ([`Grant::check`], [`Grant::revoked`], [`guard`]).
#[derive(Clone)]
pub struct Grant {
    keyring: Arc<Keyring>,
    /// Subscribed before the identities were read for this call, so no reload is missed.
    reloads: watch::Receiver<u64>,
    credential: Credential,
    permission: Permission,
    names: Vec<(NameKind, String)>,
}

impl Grant {
    /// The same grant, also bound to the names `message` touches.
    pub fn scoped(mut self, message: &impl Scoped) -> Self {
        self.names.extend(message.names().into_iter().map(|(kind, name)| (kind, name.to_string())));
        self
    }

    /// Whether the identities in force still let this call go on.
    pub fn check(&self) -> Result<()> {
        let identities = self.keyring.load();
        let identity = identities.find(&self.credential).ok_or_else(|| {
            Error::Unauthenticated("the credential this call was made with was revoked (identities reloaded)".into())
        })?;
        if !identity.may(self.permission) {
            return Err(Error::PermissionDenied {
                permission: self.permission.as_str().into(),
                message: format!(
                    "{:?} lost the {} permission this call needs (identities reloaded)",
                    identity.name,
                    self.permission.as_str()
                ),
            });
        }
        within_scopes(identity, self.names.iter().map(|(kind, name)| (*kind, name.as_str())))
    }

    /// Resolves, with the error to end the call with, once a reload took away what it needs;
    /// never while it keeps it.
    pub async fn revoked(&self) -> Error {
        let mut reloads = self.reloads.clone();
        loop {
            if reloads.changed().await.is_err() {
                return std::future::pending().await;
            }
            if let Err(e) = self.check() {
                return e;
            }
        }
    }
}

/// The grant a call was let in with (None: authentication is off, or the method is open).
pub fn grant<T>(request: &tonic::Request<T>) -> Option<Grant> {
    request.extensions().get::<Grant>().cloned()
}

/// `grant.check()` for an optional grant (None: nothing to check).
pub fn still_granted(grant: &Option<Grant>) -> Result<()> {
    grant.as_ref().map_or(Ok(()), Grant::check)
}

/// A response stream that ends, with UNAUTHENTICATED or PERMISSION_DENIED, as soon as a reload
/// revokes `grant`; nothing is sent after that (each message is checked before it goes out).
pub fn guard<T: Send + 'static>(
    grant: Option<Grant>,
    stream: impl Stream<Item = std::result::Result<T, tonic::Status>> + Send + 'static,
) -> Pin<Box<dyn Stream<Item = std::result::Result<T, tonic::Status>> + Send>> {
    let Some(grant) = grant else { return Box::pin(stream) };
    let stream = Box::pin(stream);
    Box::pin(futures::stream::unfold(Some((stream, grant)), |state| async move {
        let (mut stream, grant) = state?;
        tokio::select! {
            biased;
            e = grant.revoked() => Some((Err(tonic::Status::from(e)), None)),
            item = stream.next() => match (item, grant.check()) {
                (None, _) => None,
                (Some(item), Ok(())) => Some((item, Some((stream, grant)))),
                (Some(_), Err(e)) => Some((Err(tonic::Status::from(e)), None)),
            },
        }
    }))
}

/// The tower layer that authenticates every call (see the module docs). The identities can be
/// swapped at run time (a reloaded tokens file); a unary call still running then (a long poll)
/// ends UNAUTHENTICATED or PERMISSION_DENIED if the reload took its credential or permission,
/// as if its caller had left.
#[derive(Clone)]
pub struct AuthLayer {
    identities: Arc<Keyring>,
}

impl AuthLayer {
    pub fn new(identities: Arc<Keyring>) -> Self {
        Self { identities }
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Auth { inner, identities: self.identities.clone() }
    }
}

#[derive(Clone)]
pub struct Auth<S> {
    inner: S,
    identities: Arc<Keyring>,
}

impl<S, B> tower::Service<http::Request<B>> for Auth<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, std::result::Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        // Subscribed before the identities are read: a reload after this is seen by the grant.
        let reloads = self.identities.reloads.subscribe();
        match self.identities.load().check(&req) {
            Ok(identity) => {
                let grant = identity.map(|identity| {
                    let grant = Grant {
                        keyring: self.identities.clone(),
                        reloads,
                        credential: identity.credential.clone(),
                        permission: permission(req.uri().path()).unwrap_or(Permission::Read),
                        names: Vec::new(),
                    };
                    req.extensions_mut().insert(identity);
                    req.extensions_mut().insert(grant.clone());
                    grant
                });
                // The service that was polled ready serves this call; a clone waits for the next.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let call = inner.call(req);
                let Some(grant) = grant else { return Box::pin(call) };
                Box::pin(async move {
                    tokio::select! {
                        response = call => response,
                        e = grant.revoked() => Ok(tonic::Status::from(e).into_http()),
                    }
                })
            }
            Err(e) => {
                let method = method_label(req.uri().path());
                metrics::counter!("baton_rpc_denied_total", "method" => method, "reason" => e.reason()).increment(1);
                tracing::debug!(path = req.uri().path(), error = %e, "call refused");
                let status = tonic::Status::from(e);
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CertificateEntry;

    fn entry(name: &str, token: &str, roles: &[&str], scopes: &[&str]) -> TokenEntry {
        TokenEntry {
            name: name.into(),
            sha256: token_hash(token),
            roles: roles.iter().map(|s| s.to_string()).collect(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn scopes_match_names_and_kinds() {
        let config = AuthConfig {
            tokens: vec![entry("billing", "t1", &["worker"], &["billing.*", "election:lead-*"])],
            ..AuthConfig::default()
        };
        let ids = Identities::from_config(&config).unwrap();
        let id = ids.tokens.get(&token_hash("t1")).unwrap();
        assert!(id.sees(NameKind::Queue, "billing.invoices"));
        assert!(id.sees(NameKind::Queue, "billing.invoices#2"), "a shard belongs to its source");
        assert!(!id.sees(NameKind::Queue, "ops.invoices"));
        assert!(!id.sees(NameKind::Queue, "billing"), "billing.* needs the dot");
        assert!(id.sees(NameKind::Election, "lead-1"));
        assert!(!id.sees(NameKind::Queue, "lead-1"), "a kind-limited scope");
        assert!(id.may(Permission::Work) && id.may(Permission::Read));
        assert!(!id.may(Permission::Produce) && !id.may(Permission::Admin));
    }

    // Globs match whole names: a scope without a wildcard is one name, `?` one character, a `*`
    // in the middle any run of characters there (never a prefix match).
    #[test]
    fn scopes_are_whole_name_globs_not_prefixes() {
        let config = AuthConfig {
            tokens: vec![entry("t", "t1", &["worker"], &["billing", "ops-?", "tenant-*-jobs", "pool:gpu[0-9]"])],
            ..AuthConfig::default()
        };
        let ids = Identities::from_config(&config).unwrap();
        let id = ids.tokens.get(&token_hash("t1")).unwrap();
        let (q, p) = (NameKind::Queue, NameKind::Pool);
        for (kind, name, admitted) in [
            (q, "billing", true),
            (q, "billing2", false),
            (q, "billing.x", false),
            (q, "billin", false),
            (q, "ops-1", true),
            (q, "ops-", false),
            (q, "ops-12", false),
            (q, "tenant-a-jobs", true),
            (q, "tenant-abc-jobs", true),
            (q, "tenant-a-jobs2", false),
            (q, "tenant-a-job", false),
            (q, "tenant-", false),
            (p, "gpu7", true),
            (p, "gpu", false),
            (p, "gpu77", false),
            (q, "gpu7", false),
        ] {
            assert_eq!(id.sees(kind, name), admitted, "{} {name}", kind.as_str());
        }
    }

    #[test]
    fn bad_entries_are_configuration_errors_naming_them() {
        let cases: Vec<(AuthConfig, &str)> = vec![
            (AuthConfig { tokens: vec![entry("a", "t", &[], &[])], ..Default::default() }, "has no roles"),
            (AuthConfig { tokens: vec![entry("a", "t", &["boss"], &[])], ..Default::default() }, "role \"boss\""),
            (AuthConfig { tokens: vec![entry("a", "t", &["admin"], &["table:x"])], ..Default::default() }, "scope"),
            (AuthConfig { tokens: vec![entry("a", "t", &["admin"], &["q["])], ..Default::default() }, "scope"),
            (
                AuthConfig {
                    tokens: vec![TokenEntry { sha256: "abc".into(), ..entry("a", "t", &["admin"], &[]) }],
                    ..Default::default()
                },
                "64 hex digits",
            ),
            (
                AuthConfig {
                    tokens: vec![entry("a", "t", &["admin"], &[]), entry("b", "t", &["admin"], &[])],
                    ..Default::default()
                },
                "listed twice",
            ),
            (
                AuthConfig {
                    certificates: vec![CertificateEntry { common_name: "w".into(), roles: vec![], scopes: vec![] }],
                    ..Default::default()
                },
                "auth.certificates",
            ),
            (AuthConfig { tokens_file: "/nonexistent/tokens.toml".into(), ..Default::default() }, "auth.tokens_file"),
        ];
        for (config, says) in cases {
            let e = Identities::from_config(&config).unwrap_err().to_string();
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn every_method_needs_the_documented_permission() {
        use Permission::*;
        for (path, p) in [
            ("/baton.v1.AgentService/Register", Some(Produce)),
            ("/baton.v1.AgentService/CancelRun", Some(Produce)),
            ("/baton.v1.AgentService/Acquire", Some(Work)),
            ("/baton.v1.AgentService/RecordStep", Some(Work)),
            ("/baton.v1.AgentService/WatchAgent", Some(Read)),
            ("/baton.v1.AgentService/Signal", Some(Produce)),
            ("/baton.v1.AgentService/ListAgents", Some(Read)),
            ("/baton.v1.ClaimService/WatchPool", Some(Read)),
            ("/baton.v1.LeaderService/Resign", Some(Work)),
            ("/baton.v1.LeaderService/Observe", Some(Read)),
            ("/baton.v1.LeaderService/ListElections", Some(Read)),
            ("/baton.v1.LeaderService/GetElectionHistory", Some(Read)),
            ("/baton.v1.ScheduleService/Cancel", Some(Produce)),
            ("/baton.v1.ScheduleService/ListMessages", Some(Read)),
            ("/baton.v1.AdminService/Purge", Some(Admin)),
            ("/baton.v1.AdminService/NewThing", Some(Admin)),
            ("/grpc.health.v1.Health/Check", None),
        ] {
            assert_eq!(permission(path), p, "{path}");
        }
    }

    #[test]
    fn refused_methods_are_labelled_from_a_closed_set() {
        assert_eq!(method_label("/baton.v1.AgentService/Register"), "Register");
        assert_eq!(method_label("/baton.v1.AdminService/Purge"), "Purge");
        assert_eq!(method_label("/externalscaler.ExternalScaler/IsActive"), "IsActive");
        assert_eq!(method_label("/grpc.health.v1.Health/Check"), "Check");
        for junk in ["/baton.v1.AgentService/JsonJunk0", "/x.Y/Register", "/", "", "Register"] {
            assert_eq!(method_label(junk), "unknown", "{junk}");
        }
    }
}
