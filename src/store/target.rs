//! Where Redis is: the URL forms `--redis-url` accepts, parsed once at start.
//!
//! | form | meaning |
//! |---|---|
//! | `redis://[user:password@]host[:port][/db]` | one node |
//! | `rediss://…` | one node over TLS |
//! | `redis+unix:///path/redis.sock` (or `unix://`) | one node on a Unix socket |
//! | `redis+cluster://[user:password@]h1:p1,h2:p2,…` | Redis Cluster, from seed nodes |
//! | `rediss+cluster://…` | Redis Cluster over TLS |
//! | `redis+sentinel://[user:password@]s1:p1,s2:p2,…/master[/db]` | the master Sentinel names |
//! | `rediss+sentinel://…` | the same, TLS to the master and to the sentinels |
//!
//! `user:password` are the ACL user of the data nodes (percent-encoded as in any URL); the
//! sentinels' own credentials are `redis.sentinel_username` / `redis.sentinel_password`.

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use crate::config::redact_url as redact;
use crate::error::{Error, Result};

/// A parsed `--redis-url`.
#[derive(Clone, Debug)]
pub enum Target {
    /// One node (TCP, TLS or Unix socket).
    Node(ConnectionInfo),
    /// Redis Cluster, reached through any of its seeds.
    Cluster(Vec<ConnectionInfo>),
    /// The master a set of sentinels names.
    Sentinel {
        sentinels: Vec<ConnectionAddr>,
        master: String,
        /// ACL user, password and database of the data nodes.
        node: RedisConnectionInfo,
        tls: bool,
    },
}

/// The default port of a Sentinel.
const SENTINEL_PORT: u16 = 26379;

impl Target {
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |why: &str| Error::Config(format!("redis url {}: {why}", redact(url)));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("expected <scheme>://…"))?;
        match scheme {
            "redis" | "rediss" | "redis+unix" | "unix" => {
                Ok(Target::Node(url.into_connection_info().map_err(|e| bad(&e.to_string()))?))
            }
            "redis+cluster" | "rediss+cluster" => {
                let tls = scheme.starts_with("rediss");
                let (userinfo, hosts, path) = split_authority(rest);
                if hosts.is_empty() {
                    return Err(bad("name at least one seed node: redis+cluster://host:port,host:port"));
                }
                if !path.is_empty() {
                    return Err(bad("a cluster has no database number or master name after the hosts"));
                }
                let seeds = hosts
                    .iter()
                    .map(|host| {
                        let seed = format!("{}://{userinfo}{host}", if tls { "rediss" } else { "redis" });
                        seed.into_connection_info().map_err(|e| bad(&e.to_string()))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Target::Cluster(seeds))
            }
            "redis+sentinel" | "rediss+sentinel" => {
                let tls = scheme.starts_with("rediss");
                let (userinfo, hosts, path) = split_authority(rest);
                let mut path = path.split('/').filter(|p| !p.is_empty());
                let master =
                    path.next().ok_or_else(|| bad("name the master: redis+sentinel://s1:26379,s2:26379/mymaster"))?;
                let db = path.next().unwrap_or("0");
                if hosts.is_empty() {
                    return Err(bad("name at least one sentinel: redis+sentinel://host:26379/mymaster"));
                }
                let sentinels = hosts
                    .iter()
                    .map(|host| {
                        let (name, port) = match host.rsplit_once(':') {
                            Some((name, port)) => (name, port.parse::<u16>().map_err(|_| bad("bad sentinel port"))?),
                            None => (*host, SENTINEL_PORT),
                        };
                        let name = name.trim_start_matches('[').trim_end_matches(']').to_string();
                        Ok(if tls {
                            ConnectionAddr::TcpTls { host: name, port, insecure: false, tls_params: None }
                        } else {
                            ConnectionAddr::Tcp(name, port)
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                // The data nodes' credentials and database, decoded by redis-rs itself.
                let node = format!("redis://{userinfo}localhost/{db}")
                    .into_connection_info()
                    .map_err(|e| bad(&e.to_string()))?
                    .redis_settings()
                    .clone();
                Ok(Target::Sentinel { sentinels, master: master.to_string(), node, tls })
            }
            other => Err(bad(&format!(
                "unknown scheme {other:?}; use redis, rediss, redis+unix, redis+cluster, rediss+cluster, \
                 redis+sentinel or rediss+sentinel"
            ))),
        }
    }

    /// Whether connections use TLS.
    pub fn tls(&self) -> bool {
        match self {
            Target::Node(info) => matches!(info.addr(), ConnectionAddr::TcpTls { .. }),
            Target::Cluster(seeds) => seeds.iter().any(|s| matches!(s.addr(), ConnectionAddr::TcpTls { .. })),
            Target::Sentinel { tls, .. } => *tls,
        }
    }
}

/// Splits `user:pass@h1:p1,h2:p2/path` into (`user:pass@` or ``, hosts, `path`).
fn split_authority(rest: &str) -> (&str, Vec<&str>, &str) {
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    (userinfo, hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).collect(), path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses() {
        assert!(matches!(Target::parse("redis://127.0.0.1:6379/2").unwrap(), Target::Node(_)));
        let Target::Node(tls) = Target::parse("rediss://u:p@redis.example:6380").unwrap() else { panic!() };
        assert!(matches!(tls.addr(), ConnectionAddr::TcpTls { .. }));
        assert_eq!(tls.redis_settings().username(), Some("u"));
        let Target::Node(unix) = Target::parse("redis+unix:///tmp/r.sock").unwrap() else { panic!() };
        assert!(matches!(unix.addr(), ConnectionAddr::Unix(_)));
        let Target::Cluster(seeds) = Target::parse("redis+cluster://app:s%40cret@h1:7000,h2:7001").unwrap() else {
            panic!()
        };
        assert_eq!(seeds.len(), 2);
        assert_eq!(seeds[1].addr(), &ConnectionAddr::Tcp("h2".into(), 7001));
        assert_eq!(seeds[0].redis_settings().password(), Some("s@cret"));
        assert!(Target::parse("rediss+cluster://h1:7000").unwrap().tls());
        let Target::Sentinel { sentinels, master, node, tls } =
            Target::parse("redis+sentinel://app:pw@s1,s2:26380/mymaster/3").unwrap()
        else {
            panic!()
        };
        assert_eq!(sentinels, vec![ConnectionAddr::Tcp("s1".into(), 26379), ConnectionAddr::Tcp("s2".into(), 26380)]);
        assert_eq!((master.as_str(), node.db(), node.username(), tls), ("mymaster", 3, Some("app"), false));
    }

    #[test]
    fn bad_forms_are_clear_errors_without_the_password() {
        for (url, says) in [
            ("http://h:1", "unknown scheme"),
            ("redis+cluster://", "at least one seed"),
            ("redis+cluster://h1:1/0", "no database"),
            ("redis+sentinel://s1:26379", "name the master"),
            ("redis+sentinel://u:hunter2@s1:x/m", "bad sentinel port"),
            ("localhost:6379", "expected <scheme>"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("hunter2"), "{url}: {e}");
        }
        assert_eq!(redact("redis://u:pw@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }
}
