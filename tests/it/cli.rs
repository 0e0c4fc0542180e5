//! The operator CLI (`baton health`, `queues`, `agents`, `dlq`, `purge`, `leaders`, `pools`,
//! `pause`, `resume`): the real binary against a live Baton with data in it, tables and
//! `--json`, plain and over mutual TLS with a token.
//!
//! Invariants checked: every command shows what the server holds (the figures match what the
//! test put there); `dlq retry`, `pause` and `resume` change what they say; `purge --dry-run`
//! changes nothing; a refused call (no token) exits non-zero with the gRPC code, and changes
//! nothing.

use crate::common;

use std::{path::Path, process::Output, time::Duration};

use baton::pb::{claim_service_client::ClaimServiceClient, leader_service_client::LeaderServiceClient};
use common::*;
use serde_json::Value;

/// Runs `baton ARGS` against `addr`; its output.
async fn baton(addr: &str, args: &[&str], extra: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.args(args).args(["--addr", addr]).args(extra).env_remove("BATON_TOKEN");
    tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("the CLI answers").unwrap()
}

/// Runs `baton ARGS`, expecting success; its stdout.
async fn ok(addr: &str, args: &[&str]) -> String {
    let out = baton(addr, args, &[]).await;
    assert!(out.status.success(), "baton {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

async fn json(addr: &str, args: &[&str]) -> Value {
    let mut with = args.to_vec();
    with.push("--json");
    serde_json::from_str(&ok(addr, &with).await).expect("--json prints JSON")
}

/// The row of a table whose first cells are `first`.
fn row<'a>(table: &'a str, first: &[&str]) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.len() >= first.len() && cells[..first.len()] == *first)
        .unwrap_or_else(|| panic!("no row {first:?} in\n{table}"))
}

// A queue with waiting, held and dead-lettered agents (one keyed, with a priority), a pool with
// an idle resource, an election with a leader: every command shows them, in tables and JSON;
// dlq retry, pause and resume act; purge --dry-run changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_shows_and_changes_what_the_server_holds() {
    let mut env = Env::start().await;
    let addr = format!("http://{}", env.baton.addr);
    let mut agents = vec![agent("alpha", 3_600_000, 60_000), agent("beta", 3_600_000, 60_000)];
    agents.push(pb::Agent { key: "acme".into(), priority: 5, ..agent("gamma", 3_600_000, 60_000) });
    agents.push(pb::Agent { max_attempts: 1, ..agent("doomed", 3_600_000, 60_000) });
    register(&mut env.client, "mail", agents).await;
    // gamma first (priority 5), then alpha, beta, doomed.
    let leases = acquire(&mut env.client, "mail", "worker-1", 4).await;
    assert_eq!(leases.len(), 4);
    let gamma = leases.iter().find(|l| l.name == "gamma").unwrap();
    let doomed = leases.iter().find(|l| l.name == "doomed").unwrap();
    env.client.complete(complete_req(doomed, pb::Outcome::Unknown)).await.unwrap();
    for l in leases.iter().filter(|l| l.name == "alpha" || l.name == "beta") {
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    let channel = env.baton.channel().await;
    ClaimServiceClient::new(channel.clone())
        .offer(pb::OfferRequest {
            request_id: String::new(),
            pool: "sandboxes".into(),
            resources: vec![pb::Resource { id: "sb-1".into(), ..Default::default() }],
        })
        .await
        .unwrap();
    let term = LeaderServiceClient::new(channel.clone())
        .campaign(pb::CampaignRequest {
            election: "reports".into(),
            candidate_id: "node-a".into(),
            ttl: dur(60_000),
            wait: None,
        })
        .await
        .unwrap()
        .into_inner();

    // health: every source, its status.
    let health = ok(&addr, &["health"]).await;
    assert!(health.starts_with("status "), "{health}");
    row(&health, &["queue", "mail"]);
    row(&health, &["pool", "sandboxes"]);
    let h = json(&addr, &["health"]).await;
    // The GetHealthResponse in proto3 JSON: a uint64 is a string, an enum its value's name.
    let mail = h["sources"].as_array().unwrap().iter().find(|s| s["source"]["name"] == "mail").unwrap();
    assert_eq!(
        (&mail["source"]["kind"], &mail["deadLettered"]),
        (&Value::from("SOURCE_KIND_QUEUE"), &Value::from("1"))
    );
    assert_eq!(mail["inUse"], "1", "gamma is held");

    // queues: held, dead letters.
    let queues = ok(&addr, &["queues"]).await;
    let mail = row(&queues, &["mail"]);
    assert_eq!((mail[3], mail[6]), ("1", "1"), "working 1, dlq 1: {queues}");

    // agents: gamma held by worker-1 with its token, key and priority.
    let listed = ok(&addr, &["agents", "mail"]).await;
    let g = row(&listed, &["gamma", "working"]);
    assert_eq!((g[3], g[4]), ("worker-1", gamma.token.to_string().as_str()), "{listed}");
    assert_eq!((g[6], g[7]), ("acme", "5"));
    row(&listed, &["alpha", "waiting"]);
    row(&listed, &["doomed", "dead-lettered"]);
    let a = json(&addr, &["agents", "mail"]).await;
    let g = a["agents"].as_array().unwrap().iter().find(|x| x["agent"]["name"] == "gamma").unwrap();
    assert_eq!(
        (g["holder"].as_str(), g["token"].as_str(), g["agent"]["key"].as_str(), g["state"].as_str()),
        (Some("worker-1"), Some(gamma.token.to_string().as_str()), Some("acme"), Some("AGENT_STATE_WORKING"))
    );

    // dlq list, then retry: doomed is due again.
    let dlq = ok(&addr, &["dlq", "list"]).await;
    let d = row(&dlq, &["queue", "mail", "doomed"]);
    assert_eq!(d[3], "UNKNOWN");
    let only = json(&addr, &["dlq", "list", "--kind", "queue", "--name", "mail"]).await;
    assert_eq!(only["deadLetters"].as_array().unwrap().len(), 1);
    assert_eq!(ok(&addr, &["dlq", "retry", "queue", "mail", "doomed"]).await, "retried doomed\n");
    assert!(json(&addr, &["dlq", "list"]).await["deadLetters"].is_null(), "an empty list is left out");
    let again = acquire(&mut env.client, "mail", "worker-2", 5).await;
    assert_eq!(again.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["doomed"]);
    env.client.complete(complete_req(&again[0], pb::Outcome::Unknown)).await.unwrap();
    assert_eq!(ok(&addr, &["dlq", "delete", "queue", "mail", "doomed"]).await, "deleted doomed\n");
    assert!(json(&addr, &["dlq", "list"]).await["deadLetters"].is_null(), "an empty list is left out");

    // purge --dry-run changes nothing.
    let before = env.redis.snapshot().await;
    let purged = ok(&addr, &["purge", "--dry-run"]).await;
    assert!(purged.contains("dry run: nothing changed"), "{purged}");
    assert_eq!(json(&addr, &["purge", "--dry-run"]).await["dryRun"], true);
    assert_eq!(env.redis.snapshot().await, before, "a dry run changed Redis");

    // leaders: the named election's term; with no name every registered election (Baton's
    // own sweeper election among them); --history the terms of the named ones.
    let leaders = ok(&addr, &["leaders", "reports"]).await;
    let r = row(&leaders, &["reports"]);
    assert_eq!((r[1], r[2]), ("node-a", term.token.to_string().as_str()));
    let all = ok(&addr, &["leaders"]).await;
    assert!(all.starts_with("ELECTION  "), "{all}");
    let r = row(&all, &["reports"]);
    assert_eq!((r[1], r[2]), ("node-a", term.token.to_string().as_str()));
    row(&all, &["baton-sweeper"]);
    let listed = json(&addr, &["leaders"]).await;
    let names: Vec<&str> =
        listed["elections"].as_array().unwrap().iter().map(|e| e["election"].as_str().unwrap()).collect();
    assert!(names.contains(&"reports") && names.contains(&"baton-sweeper"), "{names:?}");
    let reports = listed["elections"].as_array().unwrap().iter().find(|e| e["election"] == "reports").unwrap();
    assert_eq!(
        (reports["leaderId"].as_str(), reports["token"].as_str()),
        (Some("node-a"), Some(term.token.to_string().as_str()))
    );
    assert!(reports["lastTermStartedAt"].is_string(), "{reports}");
    LeaderServiceClient::new(channel.clone())
        .resign(pb::ResignRequest { election: "reports".into(), candidate_id: "node-a".into(), token: term.token })
        .await
        .unwrap();
    let history = ok(&addr, &["leaders", "reports", "--history"]).await;
    assert!(history.starts_with("election reports: 1 term(s) kept\nTOKEN"), "{history}");
    let r = row(&history, &[term.token.to_string().as_str(), "node-a"]);
    assert_eq!(r[4], "resigned", "{history}");
    let history = json(&addr, &["leaders", "reports", "--history"]).await;
    let first = &history["histories"][0];
    assert_eq!(
        (first["election"].as_str(), first["terms"][0]["end"].as_str()),
        (Some("reports"), Some("TERM_END_RESIGNED"))
    );
    assert_eq!(first["terms"][0]["leaderId"], "node-a");

    // pools.
    let pools = ok(&addr, &["pools"]).await;
    let p = row(&pools, &["sandboxes"]);
    assert_eq!((p[1], p[2]), ("1", "0"), "idle 1, claimed 0: {pools}");
    assert_eq!(json(&addr, &["pools"]).await["pools"][0]["idle"], "1");

    // pause and resume: Acquire gets nothing while paused.
    assert_eq!(ok(&addr, &["pause", "queue", "mail"]).await, "queue mail paused\n");
    assert_eq!(ok(&addr, &["pause", "queue", "mail"]).await, "queue mail was already paused\n");
    register(&mut env.client, "mail", vec![agent("delta", 3_600_000, 60_000)]).await;
    assert!(acquire(&mut env.client, "mail", "worker-3", 5).await.is_empty(), "paused");
    assert_eq!(row(&ok(&addr, &["queues"]).await, &["mail"])[9], "yes");
    assert_eq!(json(&addr, &["resume", "queue", "mail"]).await["changed"], true);
    let resumed = acquire(&mut env.client, "mail", "worker-3", 5).await;
    assert!(resumed.iter().any(|l| l.name == "delta"), "resumed: {resumed:?}");
}

// Over mutual TLS with a token, as configured for any client: the CLI answers; without the
// token the call is refused (exit 1, UNAUTHENTICATED named) and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_speaks_mutual_tls_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let c = baton::tools::devcerts::generate(dir.path(), &["localhost".into(), "127.0.0.1".into()], "ops").unwrap();
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.tls.cert_file = c.server_cert.display().to_string();
    config.tls.key_file = c.server_key.display().to_string();
    config.tls.client_ca_file = c.ca.display().to_string();
    config.auth.tokens_file = c.tokens_file.display().to_string();
    let server = TestBaton::start(&redis.url(), config).await;
    let addr = format!("https://localhost:{}", server.addr.port());
    let path = |p: &Path| p.display().to_string();
    let tls = [
        "--ca-file".to_string(),
        path(&c.ca),
        "--client-cert".into(),
        path(&c.client_cert),
        "--client-key".into(),
        path(&c.client_key),
    ];
    let tls: Vec<&str> = tls.iter().map(String::as_str).collect();
    let mut with_token = tls.clone();
    with_token.extend(["--token", &c.token]);

    let client = baton::client::Client::builder(addr.clone())
        .ca_file(&c.ca)
        .client_certificate(&c.client_cert, &c.client_key)
        .token(c.token.clone())
        .connect()
        .await
        .expect("connect over mutual TLS");
    let defs = vec![agent("a1", 3_600_000, 60_000)];
    client
        .agents()
        .register(pb::RegisterRequest { queue: "mail".into(), agents: defs, ..Default::default() })
        .await
        .unwrap();

    let before = redis.snapshot().await;
    let refused = baton(&addr, &["pause", "queue", "mail"], &tls).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("Unauthenticated"), "{stderr}");
    assert_eq!(redis.snapshot().await, before, "a refused call changed nothing");

    let out = baton(&addr, &["pause", "queue", "mail"], &with_token).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = baton(&addr, &["health", "--json"], &with_token).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let h: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mail = h["sources"].as_array().unwrap().iter().find(|s| s["source"]["name"] == "mail").expect("mail in health");
    assert_eq!(mail["paused"], true);
    server.stop().await.unwrap();
}

/// Runs `baton ARGS`, expecting it to fail; its stderr.
async fn fails(addr: &str, args: &[&str]) -> (String, String) {
    let out = baton(addr, args, &[]).await;
    assert!(!out.status.success(), "{args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

// The operator commands beyond listing: one agent in full, cancelling its run, limits shown and
// changed one at a time; an address without a scheme is accepted; a name that never existed is
// NOT_FOUND (nothing created); a dead-letter retry of several ids reports each, goes on past a
// missing one and fails saying how many failed; runtime errors never say "invalid configuration".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_commands_act_and_report_each_result() {
    let mut env = Env::start().await;
    let addr = env.baton.addr.to_string(); // host:port, no scheme
    let payload = pb::Agent { payload: b"hello world".to_vec(), ..agent("alpha", 3_600_000, 60_000) };
    let defs = vec![payload, pb::Agent { max_attempts: 1, ..agent("doomed", 3_600_000, 60_000) }];
    register(&mut env.client, "mail", defs).await;
    let leases = acquire(&mut env.client, "mail", "worker-1", 2).await;
    let alpha = leases.iter().find(|l| l.name == "alpha").unwrap();
    let doomed = leases.iter().find(|l| l.name == "doomed").unwrap();
    env.client.complete(complete_req(doomed, pb::Outcome::Unknown)).await.unwrap();

    // agent: the whole record, with the payload as text.
    let shown = ok(&addr, &["agent", "mail", "alpha"]).await;
    assert_eq!(row(&shown, &["holder"])[1], "worker-1", "{shown}");
    assert_eq!(row(&shown, &["token"])[1], alpha.token.to_string());
    assert!(shown.contains("hello world"), "{shown}");
    let a = json(&addr, &["agent", "mail", "alpha"]).await;
    assert_eq!(
        (a["agent"]["state"].as_str(), a["agent"]["agent"]["payload"].as_str()),
        (Some("AGENT_STATE_WORKING"), Some("aGVsbG8gd29ybGQ="))
    );
    // A step the run recorded is shown in the table and in --json.
    let step = pb::RecordStepRequest {
        queue: "mail".into(),
        name: "alpha".into(),
        token: alpha.token,
        step: "fetch".into(),
        result: b"page one".to_vec(),
    };
    env.client.record_step(step).await.unwrap();
    let shown = ok(&addr, &["agent", "mail", "alpha"]).await;
    assert_eq!(row(&shown, &["steps"])[1], "1", "{shown}");
    assert!(row(&shown, &["step"])[1..].join(" ").starts_with("fetch at "), "{shown}");
    assert!(shown.contains("page one"), "{shown}");
    let a = json(&addr, &["agent", "mail", "alpha"]).await;
    assert_eq!(a["agent"]["steps"][0]["name"], "fetch");
    let (_, err) = fails(&addr, &["agent", "mail", "nobody"]).await;
    assert!(err.contains("NotFound"), "{err}");

    // cancel: the run is marked; GetAgent says so.
    let c = json(&addr, &["cancel", "mail", "alpha"]).await;
    assert_eq!((c["requested"].as_bool(), c["token"].as_str()), (Some(true), Some(alpha.token.to_string().as_str())));
    assert_eq!(json(&addr, &["agent", "mail", "alpha"]).await["agent"]["cancelRequested"], true);

    // limits: shown, changed one at a time (the others stay), cleared.
    assert_eq!(ok(&addr, &["limits", "mail"]).await, "mail limits: -\n");
    ok(&addr, &["limits", "mail", "--concurrency", "5"]).await;
    let l = ok(&addr, &["limits", "mail", "--rate", "20", "--burst", "4"]).await;
    assert_eq!(l, "mail limits: concurrency 5, rate 20/s burst 4\n");
    let l = json(&addr, &["limits", "mail", "--concurrency", "0"]).await;
    // Concurrency 0 is the default: proto3 JSON leaves it out.
    assert_eq!((l["limits"].get("concurrency"), l["limits"]["rate"]["burst"].as_u64()), (None, Some(4)));
    assert_eq!(ok(&addr, &["limits", "mail", "--clear"]).await, "mail limits: -\n");

    // group: set, shown, listed, joined by a queue (a group never set is refused), left.
    assert_eq!(ok(&addr, &["group", "set", "gpu", "--concurrency", "4"]).await, "gpu\tconcurrency 4\theld 0\n");
    let (_, err) = fails(&addr, &["limits", "mail", "--group", "nope"]).await;
    assert!(err.contains("limits.group"), "{err}");
    assert_eq!(ok(&addr, &["limits", "mail", "--group", "gpu"]).await, "mail limits: group gpu\n");
    let g = ok(&addr, &["group", "set", "gpu", "--key-concurrency", "2"]).await;
    assert_eq!(g, "gpu\tconcurrency 4, per key 2\theld 0\n");
    assert_eq!(ok(&addr, &["group", "list"]).await, g);
    assert_eq!(json(&addr, &["group", "show", "gpu"]).await["groups"][0]["limits"]["keyConcurrency"], 2);
    assert_eq!(ok(&addr, &["limits", "mail", "--group", ""]).await, "mail limits: -\n");

    // A name that never existed: NOT_FOUND, nothing created, not "invalid configuration".
    let before = env.redis.snapshot().await;
    for args in [
        &["pause", "queue", "never-existed"][..],
        &["resume", "pool", "never-existed"],
        &["limits", "never-existed", "--concurrency", "1"],
    ] {
        let (_, err) = fails(&addr, args).await;
        assert!(err.contains("NotFound") && err.contains("never-existed"), "{args:?}: {err}");
        assert!(!err.contains("invalid configuration"), "{err}");
    }
    assert_eq!(env.redis.snapshot().await, before, "no phantom source");
    // --create declares them: limits set ahead of the first agent, a source paused ahead.
    let l = ok(&addr, &["limits", "declared", "--concurrency", "3", "--create"]).await;
    assert_eq!(l, "declared limits: concurrency 3\n");
    assert_eq!(ok(&addr, &["limits", "declared"]).await, "declared limits: concurrency 3\n");
    assert_eq!(ok(&addr, &["pause", "receiver", "declared", "--create"]).await, "receiver declared paused\n");

    // dlq retry of a present and a missing id: each reported, the present one retried.
    let (out, err) = fails(&addr, &["dlq", "retry", "queue", "mail", "missing", "doomed"]).await;
    assert!(out.contains("FAILED RetryDeadLetter missing: NotFound") && out.contains("retried doomed"), "{out}");
    assert!(err.contains("1 of 2 failed"), "{err}");
    assert!(json(&addr, &["dlq", "list"]).await["deadLetters"].is_null(), "doomed retried");

    // An unreachable Baton: said so, not "invalid configuration".
    let (_, err) = fails("127.0.0.1:1", &["health"]).await;
    assert!(err.contains("cannot reach Baton at 127.0.0.1:1") && !err.contains("invalid configuration"), "{err}");
}

// `messages list` shows a receiver's scheduled messages by delivery time (payload as text) and
// the in-flight one with its consumer; `messages cancel` removes what it names, reporting each
// id (a missing one fails the command, saying how many).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_listed_and_cancelled() {
    let env = Env::start().await;
    let addr = format!("http://{}", env.baton.addr);
    let mut s = baton::pb::schedule_service_client::ScheduleServiceClient::new(env.baton.channel().await);
    let later = |payload: &str, delay_ms: u64| pb::ScheduleRequest {
        receiver: "inbox".into(),
        payload: payload.as_bytes().to_vec(),
        when: Some(pb::schedule_request::When::Delay(dur(delay_ms).unwrap())),
        ..Default::default()
    };
    let second = s.schedule(later("second", 120_000)).await.unwrap().into_inner().id;
    let first = s.schedule(later("first", 60_000)).await.unwrap().into_inner().id;
    s.schedule(later("now", 0)).await.unwrap();
    let sub = pb::SubscribeRequest { receiver: "inbox".into(), consumer_id: "c-1".into(), max_in_flight: 1 };
    let mut stream = s.subscribe(sub).await.unwrap().into_inner();
    tokio::time::timeout(Duration::from_secs(20), stream.message()).await.unwrap().unwrap().unwrap();

    let listed = ok(&addr, &["messages", "list", "inbox"]).await;
    let lines: Vec<&str> = listed.lines().collect();
    assert!(lines[1].starts_with(&first) && lines[1].contains("first"), "{listed}");
    assert!(lines[2].starts_with(&second), "{listed}");
    assert!(lines[3].contains("in-flight") && lines[3].contains("c-1") && lines[3].contains("now"), "{listed}");
    let only = json(&addr, &["messages", "list", "inbox", "--state", "in-flight"]).await;
    assert_eq!(only["messages"].as_array().unwrap().len(), 1);

    let (out, err) = fails(&addr, &["messages", "cancel", "inbox", &first, "no-such"]).await;
    assert!(out.contains(&format!("cancelled {first}")) && out.contains("FAILED Cancel no-such: NotFound"), "{out}");
    assert!(err.contains("1 of 2 failed"), "{err}");
    let left = json(&addr, &["messages", "list", "inbox", "--state", "scheduled"]).await;
    let ids: Vec<&str> = left["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [second.as_str()]);
}

// `baton await` prints an agent's finish and result (exit 1 when it has not finished in time);
// `baton batch` counts a batch's members and closes it; `baton agent` lists parents and children.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn await_batch_and_an_agents_parents() {
    let mut env = Env::start().await;
    let addr = format!("http://{}", env.baton.addr);
    let one_shot = |name: &str| agent(name, 0, 60_000);
    register(&mut env.client, "etl", vec![one_shot("extract")]).await;
    let child = pb::Agent {
        after: vec![pb::AgentRef { queue: "etl".into(), name: "extract".into(), on_failure: 0, ..Default::default() }],
        ..one_shot("load")
    };
    register(&mut env.client, "etl", vec![child]).await;
    let not_yet = baton(&addr, &["await", "etl", "extract"], &[]).await;
    assert!(!not_yet.status.success());
    assert!(String::from_utf8_lossy(&not_yet.stderr).contains("has not finished"), "{not_yet:?}");
    let shown = ok(&addr, &["agent", "etl", "load"]).await;
    assert_eq!(row(&shown, &["state"]), ["state", "blocked"]);
    assert_eq!(row(&shown, &["parent"]), ["parent", "etl/extract:", "pending"]);
    let shown = ok(&addr, &["agent", "etl", "extract"]).await;
    assert_eq!(row(&shown, &["child"]), ["child", "etl/load"]);

    let l = acquire(&mut env.client, "etl", "w", 1).await.pop().unwrap();
    let done = pb::CompleteRequest { result: b"rows=7".to_vec(), ..complete_req(&l, pb::Outcome::Success) };
    env.client.complete(done).await.unwrap();
    let finish = json(&addr, &["await", "etl", "extract", "--wait-ms", "30000"]).await;
    // The AwaitResponse: its result's bytes in base64 ("rows=7").
    let result = &finish["result"];
    assert_eq!(
        (result["finish"].as_str(), result["result"].as_str()),
        (Some("FINISH_SUCCEEDED"), Some("cm93cz03")),
        "{finish}"
    );

    let batch = pb::RegisterBatchRequest {
        batch: "nightly".into(),
        queue: "etl".into(),
        agents: vec![one_shot("m-1"), one_shot("m-2")],
        on_complete: vec![one_shot("report")],
        ..Default::default()
    };
    env.client.register_batch(batch).await.unwrap();
    let table = ok(&addr, &["batch", "nightly"]).await;
    assert_eq!(row(&table, &["nightly"])[..6], ["nightly", "open", "2", "2", "0", "0"]);
    let closed = json(&addr, &["batch", "nightly", "--close"]).await;
    let status = &closed["status"];
    assert_eq!((status["closed"].as_bool(), status["done"].as_bool()), (Some(true), None), "{closed}");
    let missing = baton(&addr, &["batch", "nope"], &[]).await;
    assert!(!missing.status.success());

    // cancel --cascade: the root's WAIT child is cancelled too.
    register(&mut env.client, "etl", vec![one_shot("root")]).await;
    let leaf = pb::Agent {
        after: vec![pb::AgentRef { queue: "etl".into(), name: "root".into(), on_failure: 0, ..Default::default() }],
        keep_result: true,
        ..one_shot("leaf")
    };
    register(&mut env.client, "etl", vec![leaf]).await;
    let out = ok(&addr, &["cancel", "etl", "root", "--cascade"]).await;
    assert!(out.contains("cascade started: 1 direct children"), "{out}");
    let finish = json(&addr, &["await", "etl", "leaf", "--wait-ms", "30000"]).await;
    assert_eq!(finish["result"]["finish"].as_str(), Some("FINISH_CANCELLED"), "{finish}");
}
