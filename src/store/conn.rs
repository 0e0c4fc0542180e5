//! Connections to Redis. Two modes, chosen by `redis.connection` (see ARCHITECTURE.md for the
//! measurements behind the default): a bb8 pool of multiplexed connections, or one
//! auto-reconnecting multiplexed connection (`ConnectionManager`) shared by every call.

use std::time::Duration;

use redis::{
    aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection},
    AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value,
};

use crate::{
    config::{ConnectionMode, RedisConfig},
    error::{Error, Result},
};

/// A handle that hands out connections; cheap to clone.
#[derive(Clone)]
pub enum Redis {
    Pool(bb8::Pool<PoolManager>),
    Shared(ConnectionManager),
}

/// One connection, borrowed from the pool or cloned from the shared one.
pub enum Conn {
    Pooled(bb8::PooledConnection<'static, PoolManager>),
    Shared(ConnectionManager),
}

impl Redis {
    pub async fn connect(url: &str, cfg: &RedisConfig) -> Result<Self> {
        let connect_timeout = Duration::from_millis(cfg.connect_timeout_ms);
        let command_timeout = Duration::from_millis(cfg.command_timeout_ms);
        match cfg.connection {
            ConnectionMode::Pool => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(command_timeout));
                let manager = PoolManager { client: redis::Client::open(url)?, config };
                let pool = bb8::Pool::builder()
                    .max_size(cfg.pool_size)
                    .connection_timeout(command_timeout)
                    .build(manager)
                    .await?;
                // Fail at start, not at the first call, when Redis is not there.
                drop(pool.get().await?);
                Ok(Redis::Pool(pool))
            }
            ConnectionMode::Shared => {
                let client = redis::Client::open(url)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(command_timeout))
                    .set_number_of_retries(1);
                let manager =
                    tokio::time::timeout(connect_timeout * 2, ConnectionManager::new_with_config(client, config))
                        .await
                        .map_err(|_| Error::Unavailable(format!("connecting to {url} timed out")))??;
                Ok(Redis::Shared(manager))
            }
        }
    }

    pub async fn conn(&self) -> Result<Conn> {
        match self {
            Redis::Pool(pool) => Ok(Conn::Pooled(pool.get_owned().await?)),
            Redis::Shared(manager) => Ok(Conn::Shared(manager.clone())),
        }
    }
}

/// Makes the pool's connections with Baton's connect and command timeouts (bb8-redis's own
/// manager uses redis-rs's defaults, whatever `redis.*_timeout_ms` say).
pub struct PoolManager {
    client: redis::Client,
    config: AsyncConnectionConfig,
}

impl bb8::ManageConnection for PoolManager {
    type Connection = MultiplexedConnection;
    type Error = redis::RedisError;

    async fn connect(&self) -> Result<Self::Connection, Self::Error> {
        self.client.get_multiplexed_async_connection_with_config(&self.config).await
    }

    async fn is_valid(&self, conn: &mut Self::Connection) -> Result<(), Self::Error> {
        redis::cmd("PING").query_async::<String>(conn).await.map(drop)
    }

    fn has_broken(&self, _: &mut Self::Connection) -> bool {
        false
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Pooled(c) => c.req_packed_command(cmd),
            Conn::Shared(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Pooled(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Shared(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Pooled(c) => c.get_db(),
            Conn::Shared(c) => c.get_db(),
        }
    }
}
