//! The harness of the crate's own tests of the stores: a private real redis-server per test
//! (the embedded one, on a unix socket in a temporary directory) and the stores over it. The
//! integration suite (`tests/it/`) reaches Baton through gRPC only; what needs to be observed
//! below gRPC is tested here, in the module that owns it.

use crate::config::Config;
use crate::runtime::embedded::{Persistence, RedisProcess};
use crate::server::Stores;
use crate::store::{Core, Policy, Redis};

/// A private redis-server for one test; it stops when dropped.
pub(crate) struct TestRedis {
    _process: RedisProcess,
    dir: tempfile::TempDir,
}

impl TestRedis {
    pub(crate) async fn start() -> Self {
        let dir = tempfile::Builder::new().prefix("baton-u").tempdir_in("/tmp").expect("tempdir");
        let process = RedisProcess::start("redis-server", dir.path(), Persistence::None).await.expect("redis-server");
        Self { _process: process, dir }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis+unix://{}", self.dir.path().canonicalize().unwrap().join("redis.sock").display())
    }

    /// A direct connection, to observe or disturb Redis itself.
    pub(crate) async fn conn(&self) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        redis::Client::open(self.url()).unwrap().get_multiplexed_async_connection_with_config(&config).await.unwrap()
    }

    /// Runs `body` as a Lua script placed after the named helpers of `lua/includes/` (inlined
    /// as `build.rs` inlines them into a script), with `args` as ARGV: how a record's Lua
    /// encoder and parser are tested against its Rust side.
    pub(crate) async fn eval_includes<T: redis::FromRedisValue>(
        &self,
        includes: &[&str],
        body: &str,
        args: &[&[u8]],
    ) -> T {
        let mut source = String::from("local rcall = redis.call\n");
        for name in includes {
            let path = format!("{}/lua/includes/{name}.lua", env!("CARGO_MANIFEST_DIR"));
            source.push_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")));
            source.push('\n');
        }
        source.push_str(body);
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(source).arg(0);
        for a in args {
            cmd.arg(*a);
        }
        cmd.query_async(&mut self.conn().await).await.unwrap_or_else(|e| panic!("{includes:?}: {e}"))
    }

    /// The stores over this Redis, with `config`'s policy.
    pub(crate) async fn stores_with(&self, config: &Config) -> Stores {
        let redis = Redis::connect(&self.url(), &config.redis).await.unwrap();
        let policy = Policy::new(&config.agent, &config.limits, &config.dead_letter, &config.idempotency).with_flows(
            &config.results,
            &config.dedup,
            &config.flows,
        );
        Stores::new(Core::open(redis, "", policy, config.circuit_breaker.clone()).await.unwrap())
    }

    /// The stores over this Redis, with the default configuration.
    pub(crate) async fn stores(&self) -> Stores {
        self.stores_with(&Config::default()).await
    }
}

#[cfg(test)]
mod tests {
    use super::TestRedis;

    #[tokio::test]
    async fn the_stores_reach_their_redis() {
        let redis = TestRedis::start().await;
        let stores = redis.stores().await;
        assert!(stores.queues.active_queues().await.unwrap().1.is_empty());
    }
}
