//! The `baton` binary itself: the embedded default, the standard services, signals, and
//! configuration layering.

mod common;

use std::{process::Stdio, time::Duration};

use common::pb;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_baton");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn connect(addr: &str) -> tonic::transport::Channel {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap();
    for _ in 0..200 {
        if let Ok(channel) = endpoint.connect().await {
            return channel;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("baton did not listen on {addr}");
}

// `baton serve` with no Redis URL runs its own redis-server with an append-only file in the
// data dir, serves AgentService, health and reflection, and on SIGTERM stops cleanly, taking
// its redis-server with it. A second start finds the data again.
#[tokio::test]
async fn embedded_default_serves_and_stops_on_sigterm() {
    let data = tempfile::Builder::new().prefix("baton-s").tempdir_in("/tmp").unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let start = |fsync: &str| {
        Command::new(BIN)
            .args(["serve", "--listen", &addr, "--metrics-listen", "", "--data-dir"])
            .arg(data.path())
            .env_remove("BATON_REDIS_URL")
            .env("BATON_REDIS__EMBEDDED_FSYNC", fsync)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let mut child = start("everysec");
    let channel = connect(&addr).await;

    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let status = health
        .check(tonic_health::pb::HealthCheckRequest { service: "baton.v1.AgentService".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.status(), tonic_health::pb::health_check_response::ServingStatus::Serving);

    let mut reflection =
        tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient::new(channel.clone());
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(tonic_reflection::pb::v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut answers = reflection.server_reflection_info(tokio_stream::iter([request])).await.unwrap().into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(tonic_reflection::pb::v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        answer.message_response
    else {
        panic!("unexpected reflection answer");
    };
    let services: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
    for s in ["baton.v1.AgentService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"] {
        assert!(services.iter().any(|x| x == s), "{s} missing from {services:?}");
    }

    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    agents
        .register(pb::RegisterRequest {
            queue: "q".into(),
            agents: vec![common::agent("kept", 60_000, 1_000)],
            reset_schedule: false,
        })
        .await
        .unwrap();

    let pid = child.id().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status =
        tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits after SIGTERM").unwrap();
    assert!(status.success(), "{status}");
    assert!(data.path().join("appendonlydir").is_dir(), "append-only persistence in the data dir");
    assert!(
        tokio::net::UnixStream::connect(data.path().join("redis.sock")).await.is_err(),
        "the embedded redis-server stopped with baton"
    );

    // Restarted on the same data dir (now with fsync always), the agent is still there.
    let mut child = start("always");
    let mut agents = pb::agent_service_client::AgentServiceClient::new(connect(&addr).await);
    let got =
        agents.get_agent(pb::GetAgentRequest { queue: "q".into(), name: "kept".into() }).await.unwrap().into_inner();
    assert_eq!(got.agent.unwrap().agent.unwrap().name, "kept");
    let socket = format!("redis+unix://{}", data.path().canonicalize().unwrap().join("redis.sock").display());
    let mut conn = redis::Client::open(socket).unwrap().get_multiplexed_async_connection().await.unwrap();
    let fsync: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("appendfsync").query_async(&mut conn).await.unwrap();
    assert_eq!(fsync, ["appendfsync", "always"], "redis.embedded_fsync reaches the embedded redis-server");
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let status =
        tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits after SIGINT").unwrap();
    assert!(status.success(), "{status}");
}

// Without redis-server, the embedded default says what to install.
#[tokio::test]
async fn missing_redis_server_is_a_clear_error() {
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--data-dir"])
        .arg(data.path())
        .env("BATON_REDIS__SERVER_BINARY", "/nonexistent/redis-server")
        .env_remove("BATON_REDIS_URL")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("apt-get install -y redis-server") && stderr.contains("--redis-url"), "{stderr}");
}

// Defaults < TOML file < BATON_* environment < flags, with the fixed names of PRODUCT.md.
#[tokio::test]
async fn configuration_layers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baton.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:1111\"\nkey_prefix = \"file:\"\ndata_dir = \"/from/file\"\n[agent]\njitter_ratio = 0.3\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["config", "--listen", "127.0.0.1:3333"])
        .env("BATON_CONFIG", &file)
        .env("BATON_LISTEN", "127.0.0.1:2222")
        .env("BATON_KEY_PREFIX", "env:")
        .env("BATON_AGENT__MAX_IMMEDIATE_RETRIES", "4")
        .env_remove("BATON_REDIS_URL")
        .env_remove("BATON_DATA_DIR")
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: toml::Value = toml::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(printed["listen"].as_str(), Some("127.0.0.1:3333"), "flag beats env and file");
    assert_eq!(printed["key_prefix"].as_str(), Some("env:"), "env beats file");
    assert_eq!(printed["data_dir"].as_str(), Some("/from/file"), "file beats default");
    assert_eq!(printed["agent"]["jitter_ratio"].as_float(), Some(0.3));
    assert_eq!(printed["agent"]["max_immediate_retries"].as_integer(), Some(4));
    assert_eq!(printed["agent"]["throttled_base_ms"].as_integer(), Some(30_000), "documented default");
    assert_eq!(printed["redis"]["embedded_fsync"].as_str(), Some("everysec"), "documented default");
}
