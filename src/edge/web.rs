//! Browsers and curl on the gRPC port: gRPC-Web, and the unary RPCs as JSON (the Connect
//! protocol's unary calls: `POST /baton.v1.AgentService/Register`, `Content-Type:
//! application/json`), with CORS off unless `web.cors_allowed_origins` lists origins.
//!
//! [`WebLayer`] is the outermost layer of the gRPC server. It turns every web call into a gRPC
//! call and hands it to the same stack a gRPC call meets (trace span, `ErrorInfoLayer`,
//! `AuthLayer`, the services), so authentication, roles, scopes, validation, deadlines, error
//! details and audit apply in one place, the same for every protocol:
//!
//! - **gRPC-Web** (`application/grpc-web`, `+proto`, `-text`, over HTTP/1.1 or HTTP/2):
//!   tonic-web's translation, server streams included.
//! - **JSON**: the body is parsed with the method's input descriptor (`prost-reflect`: proto3
//!   JSON, camelCase or the proto's field names), encoded as one length-prefixed protobuf
//!   message, and sent on as `application/grpc` with the caller's headers (`authorization`,
//!   `traceparent`, ...); `Connect-Timeout-Ms` becomes `grpc-timeout`. The answer is collected
//!   (message and trailers) and written back as proto3 JSON, or as a Connect error
//!   (`{"code":"invalid_argument","message":…,"details":[…]}`) with Connect's HTTP status.
//!   Input that cannot become a request (bad JSON, a field of the wrong type, a body over the
//!   message limit, a bad `Connect-Timeout-Ms`) travels as a request body that fails when read,
//!   carrying its INVALID_ARGUMENT: the call is still authenticated first, as over gRPC, and no
//!   service sees a request.
//! - **Refused on headers**: a JSON or gRPC-Web call the stack would refuse (no credential, a
//!   wrong one, a missing permission) is refused before a byte of its body is read: the server
//!   never waits for, or holds, the body of a caller it does not let in. Streaming methods are not served as JSON (501, after the same
//!   authentication): call them over gRPC or gRPC-Web.
//! - Anything else over HTTP/1.1 gets 405 or 415 saying what this port serves; HTTP/2 calls that
//!   are neither pass to tonic untouched (gRPC).

use std::{
    sync::{Arc, LazyLock},
    task::{Context, Poll},
    time::Duration,
};

use base64::Engine as _;
use futures::future::BoxFuture;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body::Frame;
use http_body_util::{BodyExt, Full, Limited};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, MethodDescriptor, SerializeOptions};
use tonic::{body::Body, codegen::Bytes, Code, Status};
use tower::{util::Either, Layer, Service, ServiceExt};
use tower_http::cors::{AllowOrigin, Cors, CorsLayer};

use crate::config::WebConfig;

use crate::rpc::auth::Keyring;

use crate::error::{Error, Result};

/// The largest JSON body read: tonic's default limit on a decoded gRPC message, which Baton's
/// services keep. The protobuf a JSON body becomes is never larger than the JSON.
pub(crate) const MAX_JSON_BYTES: usize = 4 * 1024 * 1024;

/// Headers a page may send (CORS): what gRPC-Web clients and Connect clients send.
const ALLOWED_HEADERS: [&str; 10] = [
    "content-type",
    "authorization",
    "x-grpc-web",
    "x-user-agent",
    "grpc-timeout",
    "connect-protocol-version",
    "connect-timeout-ms",
    "traceparent",
    "tracestate",
    "x-idempotency-key",
];

/// Response headers a page may read (CORS): the status a gRPC-Web answer carries in headers
/// when it has no message, and the retry hint.
const EXPOSED_HEADERS: [&str; 5] =
    ["grpc-status", "grpc-message", "grpc-status-details-bin", "grpc-retry-pushback-ms", "retry-after"];

/// The outermost layer of the gRPC server (see the module doc).
#[derive(Clone)]
pub struct WebLayer {
    settings: Arc<Settings>,
    cors: Option<CorsLayer>,
}

struct Settings {
    grpc_web: bool,
    json: bool,
    /// [`descriptors`].
    pool: DescriptorPool,
    /// The identities in force: a streaming method asked for as JSON is refused with 501 only
    /// to a caller the service stack would let in (see `refuse_stream`).
    identities: Arc<Keyring>,
}

impl WebLayer {
    pub fn new(config: &WebConfig, identities: Arc<Keyring>) -> Result<Self> {
        let pool = descriptors().clone();
        let settings = Arc::new(Settings { grpc_web: config.grpc_web, json: config.json, pool, identities });
        Ok(Self { settings, cors: cors(&config.cors_allowed_origins)? })
    }
}

/// The messages the JSON mapping knows, by name: Baton's protos, KEDA's external scaler,
/// grpc.health.v1 and google.rpc's error details. Decoded once; the sets are compiled in.
fn descriptors() -> &'static DescriptorPool {
    static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
        let mut pool = DescriptorPool::global();
        for set in [
            crate::pb::FILE_DESCRIPTOR_SET,
            crate::keda_pb::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_types::pb::FILE_DESCRIPTOR_SET,
        ] {
            pool.decode_file_descriptor_set(set).expect("the compiled-in descriptor sets decode");
        }
        pool
    });
    &POOL
}

/// Baton's one JSON mapping of a message, proto3 JSON: lowerCamelCase field names, enums by
/// their value names (`AGENT_STATE_WORKING`), 64-bit integers as strings, bytes as base64,
/// Timestamps as RFC 3339 and Durations as seconds (`"1.500s"`), fields at their default left
/// out. The JSON calls on this port answer it, and the console's API and the CLI's `--json`
/// write it, through this one function.
fn write_json<S: serde::Serializer>(message: &DynamicMessage, serializer: S) -> std::result::Result<S::Ok, S::Error> {
    message.serialize_with_options(serializer, &SerializeOptions::new())
}

/// `message` in [`write_json`]'s mapping, as a JSON value.
///
/// # Panics
/// If `M` is not a message of [`descriptors`] (every `baton.v1` message is one).
pub(crate) fn to_json<M: prost::Message + prost::Name>(message: &M) -> serde_json::Value {
    let name = M::full_name();
    let descriptor = descriptors().get_message_by_name(&name).unwrap_or_else(|| panic!("no descriptor of {name}"));
    let dynamic = DynamicMessage::decode(descriptor, message.encode_to_vec().as_slice())
        .unwrap_or_else(|e| panic!("{name} does not decode by its own descriptor: {e}"));
    write_json(&dynamic, serde_json::value::Serializer).unwrap_or_else(|e| panic!("{name} as JSON: {e}"))
}

/// The CORS layer for `origins` (`*` or exact origins); None when empty: no CORS headers.
fn cors(origins: &[String]) -> Result<Option<CorsLayer>> {
    if origins.is_empty() {
        return Ok(None);
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let values = origins
            .iter()
            .map(|o| {
                HeaderValue::from_str(o).map_err(|e| Error::Config(format!("web.cors_allowed_origins {o:?}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        AllowOrigin::list(values)
    };
    Ok(Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::POST])
            .allow_headers(ALLOWED_HEADERS.map(HeaderName::from_static))
            .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
            .max_age(Duration::from_secs(600)),
    ))
}

impl<S> Layer<S> for WebLayer {
    type Service = Either<Cors<Web<S>>, Web<S>>;

    fn layer(&self, inner: S) -> Self::Service {
        let web = Web { inner, settings: self.settings.clone() };
        match &self.cors {
            Some(cors) => Either::Left(cors.layer(web)),
            None => Either::Right(web),
        }
    }
}

/// Routes a call by its content type (see the module doc).
#[derive(Clone)]
pub struct Web<S> {
    inner: S,
    settings: Arc<Settings>,
}

/// What a request is, by its content type and HTTP version.
#[derive(Debug, PartialEq)]
enum Kind {
    GrpcWeb,
    Json,
    /// gRPC, or anything else over HTTP/2: tonic's, as before this layer existed.
    Grpc,
    /// Over HTTP/1.1, neither gRPC-Web nor JSON.
    Other,
}

fn kind<B>(req: &Request<B>) -> Kind {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let media = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match media.as_str() {
        "application/grpc-web"
        | "application/grpc-web+proto"
        | "application/grpc-web-text"
        | "application/grpc-web-text+proto" => Kind::GrpcWeb,
        "application/json" => Kind::Json,
        _ if req.version() == Version::HTTP_2 => Kind::Grpc,
        _ => Kind::Other,
    }
}

impl<S> Service<Request<Body>> for Web<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, std::result::Result<Response<Body>, S::Error>>;

    /// Always ready: each call drives a clone of the stack (`oneshot`), which waits for its own
    /// readiness.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let settings = self.settings.clone();
        match kind(&req) {
            Kind::Grpc => Box::pin(inner.oneshot(req)),
            Kind::GrpcWeb if settings.grpc_web => {
                let req = unread_unless_admitted(&settings, req);
                Box::pin(tonic_web::GrpcWebLayer::new().layer(inner).oneshot(req))
            }
            Kind::GrpcWeb => {
                let refusal = "gRPC-Web is turned off on this server (web.grpc_web = false): call it over gRPC";
                Box::pin(async move { Ok(refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, refusal)) })
            }
            Kind::Json if settings.json => Box::pin(json_call(inner, settings, req)),
            Kind::Json => {
                let refusal = "the JSON mapping is turned off on this server (web.json = false): call it over gRPC";
                Box::pin(async move { Ok(refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, refusal)) })
            }
            Kind::Other => {
                let (status, refusal) = if req.method() != Method::POST {
                    (StatusCode::METHOD_NOT_ALLOWED, "this is Baton's gRPC port: calls are POST requests")
                } else if req
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
                {
                    (StatusCode::UNSUPPORTED_MEDIA_TYPE, "gRPC needs HTTP/2; over HTTP/1.1 send gRPC-Web (application/grpc-web) or JSON (application/json)")
                } else {
                    (StatusCode::UNSUPPORTED_MEDIA_TYPE, "this is Baton's gRPC port: send gRPC (HTTP/2), gRPC-Web (application/grpc-web) or JSON (application/json)")
                };
                Box::pin(async move { Ok(refused(status, refusal)) })
            }
        }
    }
}

/// A refusal before any method is looked at, as a Connect error (and a gRPC status, for a
/// gRPC-Web client).
fn refused(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = connect_error(status, "unimplemented", message, Vec::new());
    response.headers_mut().insert("grpc-status", HeaderValue::from(Code::Unimplemented as i32));
    if let Ok(message) = HeaderValue::from_str(message) {
        response.headers_mut().insert("grpc-message", message);
    }
    response
}

/// The method a path names (`/baton.v1.AgentService/Register`), if the pool has it.
fn method(pool: &DescriptorPool, path: &str) -> Option<MethodDescriptor> {
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    pool.get_service_by_name(service)?.methods().find(|m| m.name() == method)
}

/// One unary call as JSON: see the module doc.
async fn json_call<S>(
    inner: S,
    settings: Arc<Settings>,
    req: Request<Body>,
) -> std::result::Result<Response<Body>, S::Error>
where
    S: Service<Request<Body>, Response = Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
{
    let path = req.uri().path().to_string();
    if req.method() != Method::POST {
        return Ok(connect_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "unimplemented",
            &format!("{path}: a JSON call is a POST"),
            Vec::new(),
        ));
    }
    let method = method(&settings.pool, &path);
    if let Some(method) = method.as_ref().filter(|m| m.is_client_streaming() || m.is_server_streaming()) {
        return refuse_stream(inner, &settings, req, method).await;
    }
    if let Some(refusal) = refusal(&settings, &req) {
        // Refused on its headers: the body is never read, so a caller without credentials (or
        // without the permission) cannot make the server wait for a body or hold one. The stack
        // answers the refusal, counted and logged as any refused call.
        let (mut parts, _) = req.into_parts();
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        let response = inner.oneshot(Request::from_parts(parts, Body::new(Refused(Some(refusal))))).await?;
        return Ok(json_response(&settings.pool, method.as_ref(), &path, response).await);
    }
    let (mut parts, body) = req.into_parts();
    // A method the pool does not know: tonic answers UNIMPLEMENTED after authentication, or, if
    // some service serves it anyway, its body fails with UNIMPLEMENTED when read: never run with
    // a message nobody sent.
    let payload = match &method {
        Some(method) => request_message(&parts.headers, body, method).await.map_err(Status::from),
        None => Err(crate::error::detailed(Code::Unimplemented, format!("no RPC {path} in the JSON mapping"))),
    };
    let timeout = connect_timeout(&parts.headers).map_err(Status::from);
    let headers = &mut parts.headers;
    for name in ["connect-protocol-version", "connect-timeout-ms", "content-encoding", "accept-encoding", "accept"] {
        headers.remove(name);
    }
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    let body = match (payload, timeout) {
        (Ok(message), Ok(timeout)) => {
            if let Some(timeout) = timeout {
                headers.insert("grpc-timeout", timeout);
            }
            Body::new(Full::new(frame(&message)))
        }
        (Err(e), _) | (_, Err(e)) => Body::new(Refused(Some(e))),
    };
    let response = inner.oneshot(Request::from_parts(parts, body)).await?;
    Ok(json_response(&settings.pool, method.as_ref(), &path, response).await)
}

/// Why the service stack would refuse `req` (no or a wrong credential, a missing permission),
/// judged from its headers alone; None when it would let it in.
fn refusal<B>(settings: &Settings, req: &Request<B>) -> Option<Status> {
    settings.identities.load().check(req).err().map(Status::from)
}

/// `req` as it goes on: its body replaced, unread, by one that fails with the refusal when the
/// stack would refuse the call anyway, so the server neither waits for nor holds the body of a
/// caller it does not let in (the stack refuses it on its headers, before any read; should a
/// reload let the caller in meanwhile, reading the body fails with the same status).
fn unread_unless_admitted(settings: &Settings, req: Request<Body>) -> Request<Body> {
    match refusal(settings, &req) {
        None => req,
        Some(refusal) => {
            let (mut parts, _) = req.into_parts();
            parts.headers.remove(header::CONTENT_LENGTH);
            Request::from_parts(parts, Body::new(Refused(Some(refusal))))
        }
    }
}

/// A streaming method asked for as JSON: 501 to a caller the stack would let in; otherwise the
/// stack's own refusal (401 or 403, counted and logged as any refused call), the body failing
/// with the same status should a reload let the caller in meanwhile.
async fn refuse_stream<S>(
    inner: S,
    settings: &Settings,
    req: Request<Body>,
    method: &MethodDescriptor,
) -> std::result::Result<Response<Body>, S::Error>
where
    S: Service<Request<Body>, Response = Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
{
    let kind = match (method.is_client_streaming(), method.is_server_streaming()) {
        (true, true) => "bidirectional-streaming",
        (true, false) => "client-streaming",
        _ => "server-streaming",
    };
    let path = req.uri().path().to_string();
    let message = format!(
        "{path} is a {kind} RPC; the JSON mapping serves unary RPCs only: call it over gRPC or gRPC-Web \
         (application/grpc-web)"
    );
    if settings.identities.load().check(&req).is_ok() {
        return Ok(connect_error(StatusCode::NOT_IMPLEMENTED, "unimplemented", &message, Vec::new()));
    }
    let (mut parts, _) = req.into_parts();
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    let body = Body::new(Refused(Some(crate::error::detailed(Code::Unimplemented, message))));
    let response = inner.oneshot(Request::from_parts(parts, body)).await?;
    Ok(json_response(&settings.pool, Some(method), &path, response).await)
}

/// The protobuf encoding of the JSON request body, or the INVALID_ARGUMENT naming what is wrong.
async fn request_message(headers: &HeaderMap, body: Body, method: &MethodDescriptor) -> Result<Bytes> {
    if let Some(version) = headers.get("connect-protocol-version") {
        if version.as_bytes() != b"1" {
            return Err(Error::invalid("Connect-Protocol-Version", "must be 1 (or absent)"));
        }
    }
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        if !encoding.as_bytes().eq_ignore_ascii_case(b"identity") {
            return Err(Error::invalid("Content-Encoding", "compressed JSON bodies are not accepted: send it as is"));
        }
    }
    let json = match Limited::new(body, MAX_JSON_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(Error::invalid("request body", format!("is larger than {MAX_JSON_BYTES} bytes")));
        }
        Err(e) => return Err(Error::invalid("request body", format!("could not be read: {e}"))),
    };
    // An empty body is the empty message (`{}`), as for a call without fields.
    let json: &[u8] = if json.iter().all(u8::is_ascii_whitespace) { b"{}" } else { &json };
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let mut track = serde_path_to_error::Track::new();
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    let message = DynamicMessage::deserialize_with_options(
        method.input(),
        serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
        &options,
    )
    .and_then(|message| deserializer.end().map(|()| message));
    match message {
        Ok(message) => Ok(message.encode_to_vec().into()),
        Err(e) => {
            let field = json_field(&track.path().to_string(), &e.to_string());
            Err(Error::invalid(field, format!("is not valid JSON for {}: {e}", method.input().full_name())))
        }
    }
}

/// The JSON field a deserialization error is about: the path where it stopped (`agents[0].name`),
/// with the name of an unknown field added (its path ends at the object holding it), or
/// `request body` when it stopped before any field (malformed JSON).
fn json_field(path: &str, error: &str) -> String {
    let unknown =
        error.strip_prefix("unrecognized field name '").and_then(|rest| rest.split_once('\'')).map(|(name, _)| name);
    let path = if matches!(path, "." | "?" | "") { "" } else { path };
    match (path, unknown) {
        ("", None) => "request body".into(),
        ("", Some(name)) => name.into(),
        (path, Some(name)) => format!("{path}.{name}"),
        (path, None) => path.into(),
    }
}

/// `Connect-Timeout-Ms` as a `grpc-timeout` value (at most 8 digits: milliseconds, or whole
/// seconds rounded up beyond that).
fn connect_timeout(headers: &HeaderMap) -> Result<Option<HeaderValue>> {
    let Some(value) = headers.get("connect-timeout-ms") else { return Ok(None) };
    let ms = value
        .to_str()
        .ok()
        .filter(|v| !v.is_empty() && v.len() <= 10 && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .ok_or_else(|| {
            Error::invalid("Connect-Timeout-Ms", "must be a positive number of milliseconds, at most 10 digits")
        })?;
    let value = if ms <= 99_999_999 { format!("{ms}m") } else { format!("{}S", ms.div_ceil(1000)) };
    Ok(Some(HeaderValue::from_str(&value).expect("digits and a unit")))
}

/// One gRPC message frame: uncompressed, its length, the message.
fn frame(message: &[u8]) -> Bytes {
    let mut framed = Vec::with_capacity(5 + message.len());
    framed.push(0);
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    framed.into()
}

/// A request body whose first read fails with a status: input that could not become a message
/// reaches the service stack as this, so the call is authenticated first and the service
/// answers the status without ever seeing a request.
struct Refused(Option<Status>);

impl http_body::Body for Refused {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Status>>> {
        Poll::Ready(self.0.take().map(Err))
    }
}

/// The gRPC answer as JSON: the message, or a Connect error.
async fn json_response(
    pool: &DescriptorPool,
    method: Option<&MethodDescriptor>,
    path: &str,
    response: Response<Body>,
) -> Response<Body> {
    let (parts, body) = response.into_parts();
    // A trailers-only answer carries its status in the headers.
    let (data, trailers) = if parts.headers.contains_key("grpc-status") {
        (Bytes::new(), parts.headers.clone())
    } else {
        match body.collect().await {
            Ok(collected) => {
                let trailers = collected.trailers().cloned().unwrap_or_default();
                (collected.to_bytes(), trailers)
            }
            Err(status) => return status_error(pool, method, path, &status, &parts.headers),
        }
    };
    let status = Status::from_header_map(&trailers)
        .unwrap_or_else(|| Status::internal(format!("{path} answered without a grpc-status")));
    if status.code() != Code::Ok {
        return status_error(pool, method, path, &status, &trailers);
    }
    let Some(method) = method else {
        return status_error(pool, None, path, &Status::internal("an answer from an unknown method"), &trailers);
    };
    match decode_answer(&data, method) {
        Ok(json) => {
            let mut response = Response::new(Body::new(Full::new(Bytes::from(json))));
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        Err(why) => status_error(pool, Some(method), path, &Status::internal(why), &trailers),
    }
}

/// The one message of a unary answer, as proto3 JSON (camelCase names, defaults left out).
fn decode_answer(data: &[u8], method: &MethodDescriptor) -> std::result::Result<Vec<u8>, String> {
    let (head, message) = data.split_at_checked(5).ok_or("the answer has no message")?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if head[0] != 0 || message.len() != len {
        return Err(format!(
            "the answer is not one uncompressed message (flag {}, {len} of {} bytes)",
            head[0],
            message.len()
        ));
    }
    let message =
        DynamicMessage::decode(method.output(), message).map_err(|e| format!("the answer does not decode: {e}"))?;
    let mut json = Vec::new();
    write_json(&message, &mut serde_json::Serializer::new(&mut json))
        .map_err(|e| format!("the answer does not encode as JSON: {e}"))?;
    Ok(json)
}

/// A gRPC status as a Connect error: its code, message and details (each with its JSON as
/// `debug`), with a `Retry-After` when the status carries a pushback. UNIMPLEMENTED for a path
/// no service has is 404 naming it.
fn status_error(
    pool: &DescriptorPool,
    method: Option<&MethodDescriptor>,
    path: &str,
    status: &Status,
    metadata: &HeaderMap,
) -> Response<Body> {
    let (http, code) = connect_code(status.code());
    let (http, message) = if method.is_none() && status.code() == Code::Unimplemented {
        let message = format!(
            "no RPC {path}: a JSON call is POST /<package.Service>/<Method>, e.g. /baton.v1.AgentService/Register"
        );
        (StatusCode::NOT_FOUND, message)
    } else {
        (http, status.message().to_string())
    };
    let details = tonic_types::pb::Status::decode(status.details())
        .map(|s| s.details)
        .unwrap_or_default()
        .into_iter()
        .map(|any| detail_json(pool, any))
        .collect();
    let mut response = connect_error(http, code, &message, details);
    if let Some(pushback) = metadata.get("grpc-retry-pushback-ms") {
        if let Some(ms) = pushback.to_str().ok().and_then(|v| v.parse::<u64>().ok()) {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(ms.div_ceil(1000).max(1)));
        }
        response.headers_mut().insert("grpc-retry-pushback-ms", pushback.clone());
    }
    response
}

/// One error detail as Connect writes it: `type`, `value` (base64 of the protobuf), and
/// `debug`, the message as JSON when its type is known.
fn detail_json(pool: &DescriptorPool, any: prost_types::Any) -> serde_json::Value {
    let name = any.type_url.rsplit('/').next().unwrap_or_default().to_string();
    let debug = pool
        .get_message_by_name(&name)
        .and_then(|desc| DynamicMessage::decode(desc, any.value.as_slice()).ok())
        .and_then(|m| write_json(&m, serde_json::value::Serializer).ok());
    let mut detail = serde_json::json!({
        "type": name,
        "value": base64::engine::general_purpose::STANDARD_NO_PAD.encode(&any.value),
    });
    if let Some(debug) = debug {
        detail["debug"] = debug;
    }
    detail
}

/// Connect's name and HTTP status of a gRPC code.
fn connect_code(code: Code) -> (StatusCode, &'static str) {
    let (http, name) = match code {
        Code::Ok => (200, "ok"),
        Code::Cancelled => (499, "canceled"),
        Code::Unknown => (500, "unknown"),
        Code::InvalidArgument => (400, "invalid_argument"),
        Code::DeadlineExceeded => (504, "deadline_exceeded"),
        Code::NotFound => (404, "not_found"),
        Code::AlreadyExists => (409, "already_exists"),
        Code::PermissionDenied => (403, "permission_denied"),
        Code::ResourceExhausted => (429, "resource_exhausted"),
        Code::FailedPrecondition => (400, "failed_precondition"),
        Code::Aborted => (409, "aborted"),
        Code::OutOfRange => (400, "out_of_range"),
        Code::Unimplemented => (501, "unimplemented"),
        Code::Internal => (500, "internal"),
        Code::Unavailable => (503, "unavailable"),
        Code::DataLoss => (500, "data_loss"),
        Code::Unauthenticated => (401, "unauthenticated"),
    };
    (StatusCode::from_u16(http).expect("a valid status"), name)
}

/// A Connect error response: `{"code", "message", "details"}`.
fn connect_error(http: StatusCode, code: &str, message: &str, details: Vec<serde_json::Value>) -> Response<Body> {
    let mut json = serde_json::json!({ "code": code, "message": message });
    if !details.is_empty() {
        json["details"] = serde_json::Value::Array(details);
    }
    let mut response = Response::new(Body::new(Full::new(Bytes::from(json.to_string()))));
    *response.status_mut() = http;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> DescriptorPool {
        let keyring = Keyring::new(crate::rpc::auth::Identities::from_config(&Default::default()).unwrap());
        let layer = WebLayer::new(&WebConfig::default(), keyring).unwrap();
        layer.settings.pool.clone()
    }

    #[test]
    fn methods_are_found_by_path_and_streams_are_marked() {
        let pool = pool();
        let register = method(&pool, "/baton.v1.AgentService/Register").expect("Register");
        assert!(!register.is_client_streaming() && !register.is_server_streaming());
        assert!(method(&pool, "/baton.v1.LeaderService/Observe").unwrap().is_server_streaming());
        assert!(method(&pool, "/grpc.health.v1.Health/Check").is_some());
        assert!(method(&pool, "/externalscaler.ExternalScaler/IsActive").is_some(), "KEDA's scaler too");
        for unknown in ["/baton.v1.AgentService/Nope", "/baton.v1.Nope/Register", "/", "", "/baton.v1.AgentService"] {
            assert!(method(&pool, unknown).is_none(), "{unknown}");
        }
    }

    #[test]
    fn messages_are_written_as_proto3_json() {
        let answer = crate::pb::CancelRunResponse { requested: true, token: u64::MAX, cascaded: 0 };
        assert_eq!(to_json(&answer), serde_json::json!({ "requested": true, "token": "18446744073709551615" }));
        let health = crate::pb::SourceHealth {
            source: Some(crate::pb::Source { kind: crate::pb::SourceKind::Queue as i32, name: "mail".into() }),
            oldest_age: Some(prost_types::Duration { seconds: 1, nanos: 500_000_000 }),
            ..Default::default()
        };
        let expected =
            serde_json::json!({ "source": { "kind": "SOURCE_KIND_QUEUE", "name": "mail" }, "oldestAge": "1.500s" });
        assert_eq!(to_json(&health), expected, "enums by name, durations in seconds, defaults left out");
    }

    #[test]
    fn json_errors_name_their_field() {
        assert_eq!(
            json_field("agents[0]", "unrecognized field name 'intervalMs' at line 1 column 9"),
            "agents[0].intervalMs"
        );
        assert_eq!(json_field(".", "unrecognized field name 'worker' at line 1"), "worker");
        assert_eq!(json_field("agents[0].name", "invalid type: integer `5`, expected a string"), "agents[0].name");
        assert_eq!(json_field("?", "EOF while parsing an object"), "request body");
    }

    #[test]
    fn connect_timeouts_become_grpc_timeouts() {
        let timeout = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("connect-timeout-ms", v.parse().unwrap());
            connect_timeout(&h).map(|t| t.map(|t| t.to_str().unwrap().to_string()))
        };
        assert_eq!(timeout("1500").unwrap().as_deref(), Some("1500m"));
        assert_eq!(timeout("9999999999").unwrap().as_deref(), Some("10000000S"));
        for bad in ["0", "-1", "1.5", "12345678901", "x"] {
            assert!(timeout(bad).is_err(), "{bad}");
        }
        assert_eq!(connect_timeout(&HeaderMap::new()).unwrap(), None);
    }

    #[test]
    fn codes_map_to_connect_names_and_statuses() {
        assert_eq!(connect_code(Code::InvalidArgument), (StatusCode::BAD_REQUEST, "invalid_argument"));
        assert_eq!(connect_code(Code::Unauthenticated), (StatusCode::UNAUTHORIZED, "unauthenticated"));
        assert_eq!(connect_code(Code::PermissionDenied), (StatusCode::FORBIDDEN, "permission_denied"));
        assert_eq!(connect_code(Code::ResourceExhausted), (StatusCode::TOO_MANY_REQUESTS, "resource_exhausted"));
        assert_eq!(connect_code(Code::FailedPrecondition), (StatusCode::BAD_REQUEST, "failed_precondition"));
        assert_eq!(connect_code(Code::Unavailable), (StatusCode::SERVICE_UNAVAILABLE, "unavailable"));
    }
}
