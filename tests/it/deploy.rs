//! Deployments beyond a local node: TLS with client certificates, Redis ACL users, and their
//! failures at start, each on real redis-server processes.

use crate::common;

use std::time::Duration;

use common::{
    agent,
    certs::Certificates,
    cluster::{plain_args, until, Node, TestSentinel},
    pb,
    scenarios::{self, Probe},
    test_config, TestBaton,
};

/// `baton serve` against `url` with `env`, which must fail at start: its exit status and log.
async fn serve_fails(url: &str, env: &[(&str, String)]) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--redis-url", url]).kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("baton exits").unwrap();
    assert!(!out.status.success(), "baton serve must refuse to start");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates_runs_the_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let certs = Certificates::make(dir.path());
    let node = Node::start_tls(dir.path(), &certs).await;
    let mut config = test_config();
    config.redis.tls_ca_file = Some(certs.ca.display().to_string());
    config.redis.tls_cert_file = Some(certs.client_cert.display().to_string());
    config.redis.tls_key_file = Some(certs.client_key.display().to_string());
    let baton = TestBaton::start(&node.url(), config).await;
    scenarios::all(baton.channel().await, "tls", &Probe::client(node.client())).await;
    baton.stop().await.unwrap();
}

#[tokio::test]
async fn tls_with_a_wrong_ca_or_no_client_certificate_fails_at_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let certs = Certificates::make(dir.path());
    let node = Node::start_tls(dir.path(), &certs).await;
    let path = |p: &std::path::PathBuf| p.display().to_string();
    let client = [
        ("BATON_REDIS__TLS_CERT_FILE", path(&certs.client_cert)),
        ("BATON_REDIS__TLS_KEY_FILE", path(&certs.client_key)),
    ];
    let mut wrong_ca = client.to_vec();
    wrong_ca.push(("BATON_REDIS__TLS_CA_FILE", path(&certs.other_ca)));
    let log = serve_fails(&node.url(), &wrong_ca).await;
    assert!(log.contains("TLS") && log.contains("certificate"), "{log}");
    assert!(log.contains("redis.tls_ca_file"), "the error names the setting to check: {log}");

    let log = serve_fails(&node.url(), &[("BATON_REDIS__TLS_CA_FILE", path(&certs.ca))]).await;
    assert!(log.contains("TLS"), "without a client certificate: {log}");

    let log = serve_fails(&node.url().replace("rediss://", "redis://"), &wrong_ca).await;
    assert!(log.contains("rediss://"), "TLS files with a plain URL: {log}");
}

/// The ACL rule docs/redis.md gives for Baton's user.
const ACL_RULE: &[&str] = &[
    "on",
    ">s3cret",
    "~baton:*",
    "&baton:*",
    "-@all",
    "+@read",
    "+@write",
    "+@scripting",
    "+@pubsub",
    "+@connection",
    "+@keyspace",
    "-@dangerous",
    "+time",
    "+cluster|nodes",
];

async fn acl_node(dir: &std::path::Path, rule: &[&str]) -> Node {
    let args: Vec<String> =
        ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].iter().map(|s| s.to_string()).collect();
    let node = Node::start(dir, &args, false).await;
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("baton").arg(rule);
    let _: String = node.cmd(&setuser).await.unwrap();
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_user_with_the_documented_rule_runs_the_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let node = acl_node(dir.path(), ACL_RULE).await;
    let url = format!("redis://baton:s3cret@127.0.0.1:{}", node.port);
    let baton = TestBaton::start(&url, test_config()).await;
    scenarios::all(baton.channel().await, "acl", &Probe::node(&node.url())).await;
    baton.stop().await.unwrap();
}

/// An ACL user that may not load functions (a rule written for Baton before it used them):
/// Baton runs its scripts by EVALSHA, and every scenario passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_user_without_function_load_runs_the_scenarios_by_evalsha() {
    let dir = tempfile::tempdir().unwrap();
    let mut rule = ACL_RULE.to_vec();
    rule.push("-function|load");
    let node = acl_node(dir.path(), &rule).await;
    let url = format!("redis://baton:s3cret@127.0.0.1:{}", node.port);
    let baton = TestBaton::start(&url, test_config()).await;
    scenarios::all(baton.channel().await, "acl-evalsha", &Probe::node(&node.url())).await;
    let stats: String = node.cmd(redis::cmd("INFO").arg("commandstats")).await.unwrap();
    assert!(stats.contains("cmdstat_evalsha:"), "the scripts ran by EVALSHA: {stats}");
    assert!(!stats.contains("cmdstat_fcall:"), "no FCALL: {stats}");
    baton.stop().await.unwrap();
}

#[tokio::test]
async fn acl_user_missing_a_permission_fails_at_start_naming_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut rule = ACL_RULE.to_vec();
    rule.push("-fcall");
    rule.push("-time");
    let node = acl_node(dir.path(), &rule).await;
    let log = serve_fails(&format!("redis://baton:s3cret@127.0.0.1:{}", node.port), &[]).await;
    assert!(log.contains("fcall"), "{log}");
    assert!(
        log.contains("ACL user") && log.contains("docs/redis.md"),
        "the error points at the ACL user of docs/redis.md: {log}"
    );

    let log = serve_fails(&format!("redis://baton:wrong@127.0.0.1:{}", node.port), &[]).await;
    assert!(log.to_lowercase().contains("password") || log.contains("WRONGPASS"), "{log}");
}

/// Registers `n` agents on `queue`, retrying while Redis fails over (UNAVAILABLE): the register
/// is idempotent, so a retry after a lost answer changes nothing.
async fn register_retrying(baton: &TestBaton, queue: &str, names: std::ops::Range<usize>) {
    let mut client = baton.agents().await;
    let agents: Vec<pb::Agent> = names.map(|i| agent(&format!("a{i}"), 3_600_000, 60_000)).collect();
    let req = pb::RegisterRequest { request_id: String::new(), queue: queue.into(), agents, reset_schedule: false };
    let end = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        match client.register(req.clone()).await {
            Ok(_) => return,
            Err(e) if std::time::Instant::now() < end && e.code() == tonic::Code::Unavailable => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("register after failover: {e}"),
        }
    }
}

async fn agent_count(baton: &TestBaton, queue: &str) -> usize {
    let mut client = baton.agents().await;
    let req = pb::ListAgentsRequest { queue: queue.into(), page_size: 1000, ..Default::default() };
    client.list_agents(req).await.unwrap().into_inner().agents.len()
}

// Sentinel: Baton follows the master the sentinel names. With redis.min_replicas_ack = 1 every
// acknowledged change is on the replica too, so the failover loses none of them; Baton finds
// the new master by itself (the old one refuses connections) and wake-ups follow it. Until the
// new master has a replica, no change can be acknowledged (none could survive another
// failover): calls answer UNAVAILABLE meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_master_runs_the_scenarios_and_a_failover_loses_nothing_acknowledged() {
    let mut deployment = TestSentinel::start().await;
    let mut config = test_config();
    config.redis.min_replicas_ack = 1;
    config.redis.min_replicas_timeout_ms = 1_000;
    let baton = TestBaton::start(&deployment.url(), config).await;
    scenarios::all(baton.channel().await, "sen", &Probe::node(&deployment.primary.url())).await;
    register_retrying(&baton, "fo", 0..50).await;

    deployment.primary.kill().await;
    let replica = deployment.replica.port;
    until("the sentinel promotes the replica", Duration::from_secs(60), || async {
        deployment.master_port().await == replica
    })
    .await;
    // A new replica for the promoted master (as an orchestrator would start one): until the
    // shard has one, no change can be acknowledged.
    let fresh = Node::start_replica(deployment.dir.path(), &deployment.replica).await;
    register_retrying(&baton, "fo", 50..60).await;
    assert_eq!(agent_count(&baton, "fo").await, 60, "every acknowledged agent survived the failover");
    let both = Probe::clients(vec![deployment.replica.client(), fresh.client()]);
    scenarios::agents(baton.channel().await, "sen-after", &both).await;
    baton.stop().await.unwrap();
}

// redis.min_replicas_ack: with no replica to confirm a change, the call answers UNAVAILABLE
// saying so, instead of acknowledging what a failover could lose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_replicas_ack_never_acknowledges_what_no_replica_holds() {
    let dir = tempfile::tempdir().unwrap();
    let primary = Node::start(dir.path(), &plain_args(), false).await;
    let mut replica = Node::start_replica(dir.path(), &primary).await;
    let mut config = test_config();
    config.redis.min_replicas_ack = 1;
    config.redis.min_replicas_timeout_ms = 200;
    let baton = TestBaton::start(&primary.url(), config).await;
    register_retrying(&baton, "w", 0..3).await;
    replica.kill().await;
    until("the primary sees its replica gone", Duration::from_secs(60), || async {
        let info: String = primary.cmd(redis::cmd("INFO").arg("replication")).await.unwrap_or_default();
        info.contains("connected_slaves:0")
    })
    .await;
    let mut client = baton.agents().await;
    let req = pb::RegisterRequest {
        request_id: String::new(),
        queue: "w".into(),
        agents: vec![agent("late", 1000, 1000)],
        reset_schedule: false,
    };
    let err = client.register(req.clone()).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    assert_eq!(common::reason(&err), "NOT_REPLICATED");
    assert!(err.message().contains("min_replicas_ack"), "{}", err.message());
    // The node answers: unconfirmed changes, however many, trip no breaker, so reads (and the
    // sweeper's election on this node) go on.
    for _ in 0..8 {
        let err = client.register(req.clone()).await.unwrap_err();
        assert_eq!(common::reason(&err), "NOT_REPLICATED", "{err:?}");
    }
    let read = pb::GetAgentRequest { queue: "w".into(), name: "a0".into() };
    client.get_agent(read).await.expect("reads are served: no breaker tripped");
    baton.stop().await.unwrap();
}
