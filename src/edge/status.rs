//! `ErrorInfoLayer`: the outermost layer over every service, so that every status Baton sends
//! carries a `google.rpc.ErrorInfo` (domain `baton`), not only those made from an `Error`:
//!
//! - **Deadlines.** A call's `grpc-timeout` is enforced here, by a timer started before
//!   tonic's own (which sits outside every layer and would answer CANCELLED "Timeout expired",
//!   with no details) and set 1/20 of the timeout early (at most 50 ms), so that the answer
//!   reaches the caller before its own gRPC library gives up with a bare CANCELLED or
//!   DEADLINE_EXCEEDED of its own: the call ends DEADLINE_EXCEEDED, reason `DEADLINE_EXCEEDED`.
//!   As with tonic's, the timer bounds the wait for the response's headers; a stream already
//!   answering goes on.
//! - **Bare statuses.** A status sent without details — tonic's UNIMPLEMENTED for an unknown
//!   method, OUT_OF_RANGE for an oversized message, a stream ended by an error that was never an
//!   `Error` — gets an ErrorInfo whose reason is the code's name (`error::detailed`), in the
//!   headers of a trailers-only answer or in a stream's trailers. Statuses that carry details
//!   already pass untouched.
//!
//! Cancellation by the caller sends nothing back (the stream is reset), so no status exists to
//! carry anything: the CANCELLED a client sees then is its own library's.

use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use futures::future::BoxFuture;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use tonic::codegen::Bytes;
use tonic::{Code, Status};

/// The status headers tonic writes (`tonic::Status` keeps these names private).
const GRPC_STATUS: &str = "grpc-status";
const GRPC_DETAILS: &str = "grpc-status-details-bin";

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ErrorInfoLayer;

impl<S> tower::Layer<S> for ErrorInfoLayer {
    type Service = WithErrorInfo<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WithErrorInfo { inner }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct WithErrorInfo<S> {
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for WithErrorInfo<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    R: Body<Data = Bytes> + Send + 'static,
    R::Error: Into<tonic::codegen::StdError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // Started now, inside tonic's timeout layer, which starts its own timer only after this
        // returns, and a little early: the answer must reach the caller before its own library's
        // timer (tonic's client enforces grpc-timeout too, as a bare CANCELLED) gives up.
        let deadline = grpc_timeout(req.headers()).map(|timeout| (timeout, tokio::time::sleep(answer_by(timeout))));
        let call = self.inner.call(req);
        Box::pin(async move {
            let response = match deadline {
                None => call.await?,
                Some((timeout, sleep)) => tokio::select! {
                    biased;
                    response = call => response?,
                    () = sleep => {
                        let message = format!(
                            "deadline exceeded: the call's grpc-timeout ({} ms) ran out before it was answered",
                            timeout.as_millis()
                        );
                        metrics::counter!("baton_rpc_deadline_exceeded_total").increment(1);
                        return Ok(crate::error::detailed(Code::DeadlineExceeded, message).into_http());
                    }
                },
            };
            let (mut parts, body) = response.into_parts();
            add_error_info(&mut parts.headers);
            Ok(http::Response::from_parts(
                parts,
                tonic::body::Body::new(Trailers { inner: tonic::body::Body::new(body) }),
            ))
        })
    }
}

/// Adds ErrorInfo to the status in `headers`, if there is one, not OK, without details.
fn add_error_info(headers: &mut HeaderMap) {
    if !headers.contains_key(GRPC_STATUS) || headers.contains_key(GRPC_DETAILS) {
        return;
    }
    let Some(status) = Status::from_header_map(headers) else { return };
    if status.code() == Code::Ok {
        return;
    }
    let mut detailed = HeaderMap::new();
    if crate::error::detailed(status.code(), status.message()).add_header(&mut detailed).is_ok() {
        if let Some(details) = detailed.remove(GRPC_DETAILS) {
            headers.insert(GRPC_DETAILS, details);
        }
    }
}

/// A response body whose trailers (a stream's final status) get ErrorInfo when they lack it.
struct Trailers {
    inner: tonic::body::Body,
}

impl Body for Trailers {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        polled.map(|frame| {
            frame.map(|frame| {
                frame.map(|frame| match frame.into_trailers() {
                    Ok(mut trailers) => {
                        add_error_info(&mut trailers);
                        Frame::trailers(trailers)
                    }
                    Err(frame) => frame,
                })
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// When to answer DEADLINE_EXCEEDED for a call of `timeout`: 1/20 of it early, at most 50 ms,
/// so the answer travels back before the caller's own timer fires.
fn answer_by(timeout: Duration) -> Duration {
    timeout - (timeout / 20).min(Duration::from_millis(50))
}

/// The `grpc-timeout` header: up to 8 digits and a unit (H, M, S, m, u, n); None if absent
/// or malformed (tonic ignores a malformed one too).
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3_600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse_as_tonic_reads_them() {
        let parse = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("grpc-timeout", v.parse().unwrap());
            grpc_timeout(&h)
        };
        assert_eq!(parse("200m"), Some(Duration::from_millis(200)));
        assert_eq!(parse("3S"), Some(Duration::from_secs(3)));
        assert_eq!(parse("1H"), Some(Duration::from_secs(3_600)));
        assert_eq!(parse("5u"), Some(Duration::from_micros(5)));
        for bad in ["", "m", "123456789m", "12x", "-1S", "1.5S"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn bare_statuses_get_error_info_and_detailed_ones_stay() {
        let mut bare = HeaderMap::new();
        Status::unimplemented("no such method").add_header(&mut bare).unwrap();
        add_error_info(&mut bare);
        let status = Status::from_header_map(&bare).unwrap();
        use tonic_types::StatusExt;
        let info = status.get_details_error_info().expect("ErrorInfo added");
        assert_eq!((info.reason.as_str(), info.domain.as_str()), ("UNIMPLEMENTED", "baton"));
        assert_eq!(status.message(), "no such method");

        let mut detailed = HeaderMap::new();
        tonic::Status::from(crate::error::Error::LeaseLost("x".into())).add_header(&mut detailed).unwrap();
        let before = detailed.clone();
        add_error_info(&mut detailed);
        assert_eq!(detailed, before, "a status with details passes untouched");

        let mut ok = HeaderMap::new();
        ok.insert(GRPC_STATUS, "0".parse().unwrap());
        add_error_info(&mut ok);
        assert!(!ok.contains_key(GRPC_DETAILS));
    }
}
