//! A TCP proxy in front of a Baton whose connections a test can cut, as a worker process that
//! dies (or a network that fails) cuts them: no HTTP/2 half-close, no goodbye.

use std::{net::SocketAddr, sync::Arc};

use tokio::{
    net::{TcpListener, TcpStream},
    sync::Mutex,
    task::AbortHandle,
};
use tonic::transport::Channel;

pub struct Proxy {
    pub addr: SocketAddr,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let list = connections.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let Ok(mut outbound) = TcpStream::connect(target).await else { continue };
                let task = tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
                list.lock().await.push(task.abort_handle());
            }
        })
        .abort_handle();
        Self { addr, connections, accept }
    }

    /// A channel through the proxy (its own connection).
    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .expect("connect through the proxy")
    }

    /// Cuts every connection made so far: both sockets are dropped at once.
    pub async fn cut(&self) {
        for c in self.connections.lock().await.drain(..) {
            c.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
