//! Deployments beyond a local node: TLS with client certificates, Redis ACL users, and their
//! failures at start, each on real redis-server processes.

mod common;

use std::time::Duration;

use common::{
    cluster::{Certificates, Node},
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

/// The ACL rule README gives for Baton's user.
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

#[tokio::test]
async fn acl_user_missing_a_permission_fails_at_start_naming_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut rule = ACL_RULE.to_vec();
    rule.push("-evalsha");
    rule.push("-time");
    let node = acl_node(dir.path(), &rule).await;
    let log = serve_fails(&format!("redis://baton:s3cret@127.0.0.1:{}", node.port), &[]).await;
    assert!(log.contains("evalsha"), "{log}");
    assert!(log.contains("ACL user"), "the error points at README's ACL section: {log}");

    let log = serve_fails(&format!("redis://baton:wrong@127.0.0.1:{}", node.port), &[]).await;
    assert!(log.to_lowercase().contains("password") || log.contains("WRONGPASS"), "{log}");
}
