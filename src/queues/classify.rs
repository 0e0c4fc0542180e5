//! The server's failure classification (agent.proto, `Outcome`): a completion may leave its
//! outcome unspecified and send what its handler's error carried, an HTTP status or an error
//! class; every client language then follows this one table instead of a copy of its own.

use crate::queues::store::Outcome;

/// The outcome an HTTP status maps to.
pub(crate) fn http_status(status: u32) -> Outcome {
    match status {
        401 | 403 => Outcome::PermanentForbidden,
        429 => Outcome::Throttled,
        408 => Outcome::Transient,
        500..=599 => Outcome::ServerError,
        200..=299 => Outcome::Success,
        _ => Outcome::Unknown,
    }
}

const TRANSIENT: &[&str] = &[
    "timeout",
    "timedout",
    "deadline",
    "connect",
    "connection",
    "transport",
    "network",
    "socket",
    "reset",
    "refused",
    "eof",
    "io",
    "pipe",
    "unavailable",
    "temporary",
    "econnreset",
    "econnrefused",
    "etimedout",
    "epipe",
];
const FORBIDDEN: &[&str] = &["forbidden", "unauthorized", "unauthenticated", "permission", "denied"];
const THROTTLED: &[&str] = &["throttled", "throttling", "ratelimit", "ratelimited"];

/// The outcome an error class (a type name or code, as the handler's language spells it) maps
/// to, by its words: "SocketTimeoutException" → socket, timeout, exception → TRANSIENT.
pub(crate) fn error_class(class: &str) -> Outcome {
    let words = words(class);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if has(FORBIDDEN) {
        Outcome::PermanentForbidden
    } else if has(THROTTLED) || (has(&["rate"]) && has(&["limit", "limited", "limits"])) {
        Outcome::Throttled
    } else if has(TRANSIENT) {
        Outcome::Transient
    } else {
        Outcome::Unknown
    }
}

/// Lower-case words: split at every character that is not a letter or digit, and where a lower
/// case letter is followed by an upper case one ("IOError" → io, error: an upper-case run ends
/// before its last letter when a lower-case one follows).
fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_uppercase() && !word.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut word));
            }
        }
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_names_as_languages_spell_them() {
        assert_eq!(words("SocketTimeoutException"), ["socket", "timeout", "exception"]);
        assert_eq!(words("IOError"), ["io", "error"]);
        assert_eq!(words("requests.exceptions.ConnectionError"), ["requests", "exceptions", "connection", "error"]);
        assert_eq!(words("ECONNRESET"), ["econnreset"]);
        assert_eq!(words("context.DeadlineExceeded"), ["context", "deadline", "exceeded"]);
        assert_eq!(words("HTTP429Error"), ["http429", "error"]);
    }

    #[test]
    fn classifies_by_words() {
        for c in
            ["SocketTimeoutException", "ECONNRESET", "IOError", "java.net.ConnectException", "io", "BrokenPipeError"]
        {
            assert_eq!(error_class(c), Outcome::Transient, "{c}");
        }
        for c in ["PermissionError", "AccessDeniedException", "Forbidden"] {
            assert_eq!(error_class(c), Outcome::PermanentForbidden, "{c}");
        }
        for c in ["RateLimitError", "ThrottlingException", "rate_limited"] {
            assert_eq!(error_class(c), Outcome::Throttled, "{c}");
        }
        for c in ["ValueError", "NullPointerException", "KeyError", "Ratio", "Function", ""] {
            assert_eq!(error_class(c), Outcome::Unknown, "{c}");
        }
    }

    #[test]
    fn maps_http_statuses() {
        assert_eq!(http_status(403), Outcome::PermanentForbidden);
        assert_eq!(http_status(401), Outcome::PermanentForbidden);
        assert_eq!(http_status(429), Outcome::Throttled);
        assert_eq!(http_status(408), Outcome::Transient);
        assert_eq!(http_status(503), Outcome::ServerError);
        assert_eq!(http_status(204), Outcome::Success);
        assert_eq!(http_status(404), Outcome::Unknown);
    }
}
