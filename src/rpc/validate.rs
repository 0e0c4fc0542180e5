//! Request validation: every rule returns INVALID_ARGUMENT naming the
//! field, before anything is changed.

use crate::error::{Error, Result};

pub(crate) const MAX_NAME_LEN: usize = 128;

/// Names of queues, pools, receivers, elections, workers and agents: `[A-Za-z0-9._-]{1,128}`.
/// `{`, `}` and `:` are excluded because they would change hash slots or alias keys.
pub(crate) fn name(field: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > MAX_NAME_LEN {
        return Err(Error::invalid(field, format!("must be at most {MAX_NAME_LEN} characters, got {}", value.len())));
    }
    if let Some(c) = value.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(Error::invalid(field, format!("must match [A-Za-z0-9._-]{{1,128}}; {c:?} is not allowed")));
    }
    Ok(())
}

/// A request id (idempotent retries): empty for none, else a name, `[A-Za-z0-9._-]{1,128}`
/// (it is part of a Redis hash field, so `|` and other separators are excluded too).
pub(crate) fn request_id(field: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Ok(());
    }
    name(field, value)
}

/// Most bytes of progress a worker reports for one run (Heartbeat).
pub(crate) const MAX_PROGRESS_BYTES: usize = 256;

/// A run's progress: a small value, shown by GetAgent.
pub(crate) fn progress(field: &str, value: &str) -> Result<()> {
    if value.len() > MAX_PROGRESS_BYTES {
        return Err(Error::invalid(field, format!("must be at most {MAX_PROGRESS_BYTES} bytes, got {}", value.len())));
    }
    Ok(())
}

/// Agent names are names that are not only digits (the sweepers treat those as corrupt entries).
pub(crate) fn agent_name(field: &str, value: &str) -> Result<()> {
    name(field, value)?;
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid(field, "must not be only digits"));
    }
    Ok(())
}

/// A duration in whole milliseconds: not negative, nanos in range, at most `max_ms`.
/// Absent: None.
pub(crate) fn duration_ms(field: &str, value: Option<&prost_types::Duration>, max_ms: u64) -> Result<Option<u64>> {
    let Some(d) = value else { return Ok(None) };
    if d.seconds < 0 || d.nanos < 0 {
        return Err(Error::invalid(field, "must not be negative"));
    }
    if d.nanos >= 1_000_000_000 {
        return Err(Error::invalid(field, "nanos must be below 1e9"));
    }
    let ms = (d.seconds as u64).saturating_mul(1000).saturating_add(d.nanos as u64 / 1_000_000);
    if ms > max_ms {
        return Err(Error::invalid(field, format!("must be at most {max_ms} ms, got {ms} ms")));
    }
    Ok(Some(ms))
}

/// A long poll's `wait` in whole milliseconds, cut to the server's `max_ms` (as the proto
/// promises: "at most the server's max_wait"); 0 when absent. Negative or malformed:
/// INVALID_ARGUMENT naming `field`.
pub(crate) fn wait_ms(field: &str, value: Option<&prost_types::Duration>, max_ms: u64) -> Result<u64> {
    Ok(duration_ms(field, value, u64::MAX)?.unwrap_or(0).min(max_ms))
}

/// A count of items in one request: at least `min`, at most `max`.
pub(crate) fn count(field: &str, n: usize, min: usize, max: usize) -> Result<()> {
    if n < min {
        return Err(Error::invalid(field, format!("must have at least {min} item(s)")));
    }
    if n > max {
        return Err(Error::invalid(field, format!("must have at most {max} items, got {n}")));
    }
    Ok(())
}

/// A byte size: at most `max`.
pub(crate) fn size(field: &str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::invalid(field, format!("must be at most {max} bytes, got {len}")));
    }
    Ok(())
}

/// A fencing token: tokens start at 1, so 0 is never valid.
pub(crate) fn token(field: &str, token: u64) -> Result<()> {
    if token == 0 {
        return Err(Error::invalid(field, "must be a token returned by the server (not 0)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(name("q", "a.b_c-D9").is_ok());
        assert!(name("q", &"x".repeat(128)).is_ok());
        for bad in ["", "a:b", "a{b", "a}b", "a b", "é", &"x".repeat(129)] {
            assert!(name("q", bad).is_err(), "{bad:?}");
        }
        assert!(agent_name("n", "123").is_err());
        assert!(agent_name("n", "123a").is_ok());
    }
}
