//! The `baton` binary itself: the embedded default, the standard services, signals, and
//! configuration layering.

use crate::common;

use std::time::Duration;

use common::{pb, BatonProcess};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_baton");

/// Waits for a process to exit, without blocking the runtime.
async fn exit_status(mut baton: BatonProcess) -> std::process::ExitStatus {
    let wait = tokio::task::spawn_blocking(move || baton.child.wait());
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("exits").unwrap().unwrap()
}

// `baton serve` with no Redis URL runs its own redis-server with an append-only file in the
// data dir, serves AgentService, health and reflection, and on SIGTERM stops cleanly, taking
// its redis-server with it. A second start finds the data again.
#[tokio::test]
async fn embedded_default_serves_and_stops_on_sigterm() {
    let data = tempfile::Builder::new().prefix("baton-s").tempdir_in("/tmp").unwrap();
    let start = |fsync: &str| {
        BatonProcess::spawn(|cmd| {
            cmd.arg("--data-dir")
                .arg(data.path())
                .env_remove("BATON_REDIS_URL")
                .env("BATON_REDIS__EMBEDDED_FSYNC", fsync);
        })
    };
    let baton = start("everysec");
    let channel = baton.channel().await;
    // stderr is a pipe here, not a terminal: the log carries no colour codes.
    let log = baton.log.lock().unwrap().clone();
    assert!(log.iter().any(|l| l.contains("INFO")), "{log:#?}");
    assert!(log.iter().all(|l| !l.contains('\x1b')), "colour codes in a piped log: {log:#?}");

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
            request_id: String::new(),
            queue: "q".into(),
            agents: vec![common::agent("kept", 60_000, 1_000)],
            reset_schedule: false,
        })
        .await
        .unwrap();

    baton.signal(libc::SIGTERM);
    let status = exit_status(baton).await;
    assert!(status.success(), "{status}");
    assert!(data.path().join("appendonlydir").is_dir(), "append-only persistence in the data dir");
    assert!(
        tokio::net::UnixStream::connect(data.path().join("redis.sock")).await.is_err(),
        "the embedded redis-server stopped with baton"
    );

    // Restarted on the same data dir (now with fsync always), the agent is still there.
    let baton = start("always");
    let mut agents = pb::agent_service_client::AgentServiceClient::new(baton.channel().await);
    let got =
        agents.get_agent(pb::GetAgentRequest { queue: "q".into(), name: "kept".into() }).await.unwrap().into_inner();
    assert_eq!(got.agent.unwrap().agent.unwrap().name, "kept");
    let socket = format!("redis+unix://{}", data.path().canonicalize().unwrap().join("redis.sock").display());
    let mut conn = redis::Client::open(socket).unwrap().get_multiplexed_async_connection().await.unwrap();
    let fsync: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("appendfsync").query_async(&mut conn).await.unwrap();
    assert_eq!(fsync, ["appendfsync", "always"], "redis.embedded_fsync reaches the embedded redis-server");
    baton.signal(libc::SIGINT);
    let status = exit_status(baton).await;
    assert!(status.success(), "{status}");
}

// Kubernetes injects BATON_PORT, BATON_SERVICE_HOST, BATON_PORT_50051_TCP_… for a Service named
// `baton`: `baton serve` starts anyway, ignoring them with one warning that names them, and
// still reads its real BATON_* keys. Unknown keys in a TOML file stay an error.
#[tokio::test]
async fn foreign_baton_variables_do_not_stop_serve() {
    let redis = common::TestRedis::start().await;
    let baton = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()])
            .env("BATON_PORT", "tcp://10.0.0.7:50051")
            .env("BATON_SERVICE_HOST", "10.0.0.7")
            .env("BATON_SERVICE_PORT", "50051")
            .env("BATON_PORT_50051_TCP", "tcp://10.0.0.7:50051")
            .env("BATON_PORT_50051_TCP_ADDR", "10.0.0.7")
            .env("BATON_REPLICA_ID", "from-env");
    });
    let mut leaders = pb::leader_service_client::LeaderServiceClient::new(baton.channel().await);
    common::eventually(Duration::from_secs(60), "the real BATON_REPLICA_ID is used", || {
        let mut leaders = leaders.clone();
        async move {
            let req = pb::GetLeaderRequest { election: "baton-sweeper".into() };
            leaders.get_leader(req).await.is_ok_and(|r| r.into_inner().leader_id == "from-env")
        }
    })
    .await;
    let _ = leaders.get_leader(pb::GetLeaderRequest { election: "x".into() }).await;
    let warnings: Vec<String> =
        baton.log.lock().unwrap().iter().filter(|l| l.contains("ignoring environment variables")).cloned().collect();
    assert_eq!(warnings.len(), 1, "one warning: {warnings:?}");
    for name in [
        "BATON_PORT,",
        "BATON_SERVICE_HOST",
        "BATON_SERVICE_PORT",
        "BATON_PORT_50051_TCP,",
        "BATON_PORT_50051_TCP_ADDR",
    ] {
        assert!(warnings[0].contains(name), "{name} named in {}", warnings[0]);
    }
    assert!(!warnings[0].contains("BATON_REPLICA_ID"));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baton.toml");
    std::fs::write(&file, "port = 50051\n").unwrap();
    let out = Command::new(BIN).args(["config", "--config"]).arg(&file).output().await.unwrap();
    assert!(!out.status.success(), "an unknown TOML key is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field"));
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

// Defaults < TOML file < BATON_* environment < flags, with the documented fixed names.
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

// `baton version` names this build; `baton_build_info` carries the same labels on /metrics;
// `baton probe` exits 0 and prints SERVING against a serving Baton, and exits 1 naming the
// problem against no Baton, an unknown service, or a Baton whose Redis went away.
#[tokio::test]
async fn version_build_info_and_probe() {
    let out = Command::new(BIN).args(["version", "--json"]).output().await.unwrap();
    assert!(out.status.success());
    let build: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(build["version"], env!("CARGO_PKG_VERSION"));
    let commit = build["commit"].as_str().unwrap().to_string();
    assert!(!commit.is_empty() && build["rustc"].as_str().unwrap().starts_with("rustc "), "{build}");

    let mut redis = common::TestRedis::start().await;
    let baton = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]);
    });
    let metrics = baton
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("prometheus metrics at /metrics"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(str::to_string))
        .expect("the bound /metrics address is logged");
    let page = http_get(&metrics, "/metrics").await;
    let info = page.lines().find(|l| l.starts_with("baton_build_info{")).unwrap_or_else(|| panic!("{page}"));
    let scripts = build["scripts"].as_str().unwrap().to_string();
    for label in [
        format!("version=\"{}\"", env!("CARGO_PKG_VERSION")),
        format!("commit=\"{commit}\""),
        format!("scripts=\"{scripts}\""),
    ] {
        assert!(info.contains(&label), "{label} in {info}");
    }
    // The library `baton version` names is the one Baton loaded into its Redis.
    let libraries: Vec<redis::Value> =
        redis::cmd("FUNCTION").arg("LIST").query_async(&mut redis.conn().await).await.unwrap();
    assert_eq!(libraries.len(), 1, "one library");
    assert!(format!("{:?}", libraries[0]).contains(&scripts), "{scripts} loaded: {libraries:?}");
    assert!(info.ends_with(" 1"), "{info}");

    let probe = |addr: String, extra: &'static [&'static str]| async move {
        Command::new(BIN)
            .arg("probe")
            .args(["--addr", &addr, "--timeout-ms", "10000"])
            .args(extra)
            .output()
            .await
            .unwrap()
    };
    let ok = probe(baton.url(), &[]).await;
    assert!(ok.status.success(), "{ok:?}");
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "SERVING\n");
    let service = probe(baton.url(), &["--service", "baton.v1.AgentService"]).await;
    assert!(service.status.success(), "{service:?}");
    let unknown = probe(baton.url(), &["--service", "no.Such"]).await;
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("NotFound"), "{unknown:?}");

    // Redis gone: the health service says NOT_SERVING, and the probe fails saying so.
    redis.kill().await;
    let url = baton.url();
    common::eventually(Duration::from_secs(60), "the probe fails once Redis is gone", || {
        let url = url.clone();
        async move {
            let out = probe(url, &[]).await;
            !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("NOT_SERVING")
        }
    })
    .await;

    // Nothing listening: exit 1, naming the address.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let none = probe(closed.clone(), &[]).await;
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains(&closed), "{none:?}");
}

/// GET `path` from `addr` over plain HTTP/1.1; the body.
async fn http_get(addr: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.unwrap();
    out
}
