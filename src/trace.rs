//! W3C trace context carried with work: the `traceparent` a producer's call brings is stored with
//! the agent or message it creates and handed to the worker that runs it, so one job's trace
//! spans producer → Baton → worker. With OpenTelemetry on ([`crate::telemetry::init_tracing`]),
//! what is stored is the context of Baton's own span for that call, a child of the producer's.

use tonic::metadata::MetadataMap;

use crate::error::{Error, Result};

/// The W3C `traceparent` header: `version-traceid-parentid-flags`, lowercase hex.
pub const HEADER: &str = "traceparent";

/// Whether `s` is a usable `traceparent`: version 00 exactly, or a later version (not ff) with
/// the same first four fields; trace and parent ids not all zeros.
pub fn is_valid(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let zeros = |r: std::ops::Range<usize>| b[r].iter().all(|&c| c == b'0');
    if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return false;
    }
    if !(hex(0..2) && hex(3..35) && hex(36..52) && hex(53..55)) || &b[0..2] == b"ff" {
        return false;
    }
    if zeros(3..35) || zeros(36..52) {
        return false;
    }
    // Version 00 has nothing after the flags; later versions may add fields after a dash.
    b.len() == 55 || (&b[0..2] != b"00" && b[55] == b'-')
}

/// Checks an explicit `traceparent` field: empty, or a valid one (at most 512 bytes).
pub fn check_field(field: &str, value: &str) -> Result<()> {
    if value.is_empty() || (value.len() <= 512 && is_valid(value)) {
        return Ok(());
    }
    Err(Error::invalid(field, "must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>) or empty"))
}

/// The trace context to store with what this call creates: an explicit field wins; else the
/// context of Baton's span for this call when tracing is on; else the call's own `traceparent`
/// metadata when it is valid (an invalid header is ignored, as W3C asks); else none.
pub fn for_item(explicit: &str, incoming: &str) -> String {
    if !explicit.is_empty() {
        return explicit.to_owned();
    }
    if let Some(current) = crate::telemetry::current_traceparent() {
        return current;
    }
    incoming.to_owned()
}

/// The call's valid `traceparent` metadata, or "".
pub fn incoming(metadata: &MetadataMap) -> String {
    match metadata.get(HEADER).and_then(|v| v.to_str().ok()) {
        Some(v) if v.len() <= 512 && is_valid(v) => v.to_owned(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(is_valid(good));
        assert!(is_valid("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later"));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-011",
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
        assert!(check_field("agents[0].traceparent", "").is_ok());
        let err = check_field("agents[0].traceparent", "nope").unwrap_err();
        assert!(err.to_string().contains("agents[0].traceparent"), "{err}");
    }
}
