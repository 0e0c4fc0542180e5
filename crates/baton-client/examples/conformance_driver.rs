//! The conformance driver of the Rust helpers (clients/conformance/DRIVER.md): JSON commands
//! on stdin, one per line, mapped onto `baton_client`'s public helpers; JSON events on stdout.
//! Built with `cargo build -p baton-client --example conformance_driver`.
//!
//! One thread: a command's effect (a stop, a finish) is taken in between two steps of the
//! helpers, never in the middle of one, as in a process whose signal handler stops its worker.

use std::{
    collections::HashMap,
    io::{BufRead, Write},
    sync::{Arc, Mutex},
    time::Duration,
};

use baton_client::{
    claim::Claimer,
    leadership::Leadership,
    otel::parse_traceparent,
    pb,
    producer::{after, one_shot, wait_for, Batch, Producer},
    worker::{Failure, Steps, Worker},
    Client,
};
use opentelemetry::{context::FutureExt as _, trace::TraceContextExt};
use serde_json::{json, Value};
use tokio::{sync::oneshot, task::JoinHandle};
use tokio_stream::StreamExt as _;
use tokio_util::sync::CancellationToken;

/// Prints one event line.
fn emit(event: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

/// A gRPC status code as the protocol names it (`UNAVAILABLE`, `DEADLINE_EXCEEDED`).
fn code_name(code: tonic::Code) -> String {
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// The ordinary error a failing handler returns.
#[derive(Debug)]
struct HandlerError(String);

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HandlerError {}

/// Held runs of one worker, by agent name: finishing one sends on its channel.
type Holds = Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>;

struct RunningWorker {
    stop: CancellationToken,
    holds: Holds,
    task: JoinHandle<Result<(), tonic::Status>>,
}

struct RunningLeader {
    close: CancellationToken,
    task: JoinHandle<()>,
}

fn str_of<'a>(cmd: &'a Value, key: &str) -> &'a str {
    cmd[key].as_str().unwrap_or_default()
}

fn names_of<'a>(cmd: &'a Value, key: &str) -> Vec<&'a str> {
    cmd[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

/// A one-shot agent `name` with the command's parents, idempotency key, mode and ttl.
fn agent_of(cmd: &Value, name: &str) -> pb::Agent {
    let parents = cmd["after"].as_array().into_iter().flatten().map(|p| (str_of(p, "queue"), str_of(p, "name")));
    let agent = after(one_shot(name, vec![]), parents);
    let idempotency_mode = match str_of(cmd, "idempotency_mode") {
        "keep_first" => pb::IdempotencyMode::KeepFirst,
        "replace" => pb::IdempotencyMode::Replace,
        "debounce" => pb::IdempotencyMode::Debounce,
        _ => pb::IdempotencyMode::Unspecified,
    };
    let debounce = cmd["debounce_ms"].as_u64().and_then(|ms| Duration::from_millis(ms).try_into().ok());
    let ttl = cmd["ttl_ms"].as_u64().and_then(|ms| Duration::from_millis(ms).try_into().ok());
    let gate = &cmd["wait_for"];
    let agent = match gate.is_object() {
        true => wait_for(agent, str_of(gate, "event"), gate["timeout_ms"].as_u64().map(Duration::from_millis)),
        false => agent,
    };
    pb::Agent {
        idempotency_key: str_of(cmd, "idempotency_key").into(),
        idempotency_mode: idempotency_mode as i32,
        debounce,
        ttl,
        ..agent
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn finish_name(finish: i32) -> &'static str {
    pb::Finish::try_from(finish).unwrap_or_default().as_str_name()
}

/// The `registered` event of a Register's answer.
fn registered_event(id: &str, r: &pb::RegisterResponse) -> Value {
    let agents: Vec<_> = r
        .agents
        .iter()
        .map(|a| {
            let result = a.result.as_ref().map(|r| text(&r.result)).unwrap_or_default();
            json!({"name": a.name, "created": a.created, "deduplicated": a.deduplicated, "result": result,
                   "replaced": a.replaced, "debounced": a.debounced})
        })
        .collect();
    json!({"event": "registered", "id": id, "count": r.created + r.updated, "deduplicated": r.deduplicated,
           "agents": agents})
}

/// A lease's parents as the `started` event shows them.
fn parents(lease: &pb::Lease) -> Value {
    let parents: Vec<_> = lease
        .parents
        .iter()
        .map(|p| json!({"queue": p.queue, "name": p.name, "finish": finish_name(p.finish), "result": text(&p.result)}))
        .collect();
    parents.into()
}

/// Reports an Await's answer (None: the timeout passed first).
fn awaited(id: &str, answer: Result<Option<pb::AgentResult>, tonic::Status>) {
    emit(match answer {
        Ok(Some(r)) => {
            json!({"event": "awaited", "id": id, "done": true, "finish": finish_name(r.finish), "result": text(&r.result)})
        }
        Ok(None) => json!({"event": "awaited", "id": id, "done": false}),
        Err(s) => json!({"event": "failed", "id": id, "code": code_name(s.code())}),
    });
}

fn batch_event(id: &str, status: Result<pb::BatchStatus, tonic::Status>) {
    emit(match status {
        Ok(s) => json!({"event": "batch", "id": id, "total": s.total, "pending": s.pending, "succeeded": s.succeeded,
                        "failed": s.failed, "closed": s.closed, "done": s.done}),
        Err(s) => json!({"event": "error", "cmd": "batch", "message": s.to_string()}),
    });
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let target = std::env::var("BATON_TARGET").expect("BATON_TARGET (host:port)");
    let client = Client::builder(target).connect_lazy().expect("a valid BATON_TARGET");
    let (tx, mut commands) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut workers: HashMap<String, RunningWorker> = HashMap::new();
    let mut leaders: HashMap<String, RunningLeader> = HashMap::new();
    emit(json!({"event": "ready"}));
    while let Some(line) = commands.recv().await {
        if line.trim().is_empty() {
            continue;
        }
        let cmd: Value = match serde_json::from_str(&line) {
            Ok(cmd) => cmd,
            Err(e) => {
                emit(json!({"event": "error", "cmd": "", "message": format!("not JSON: {e}")}));
                continue;
            }
        };
        let (name, id) = (str_of(&cmd, "cmd").to_string(), str_of(&cmd, "id").to_string());
        match name.as_str() {
            "register" | "traced_register" => {
                let agents = names_of(&cmd, "names").into_iter().map(|n| agent_of(&cmd, n)).collect();
                let (producer, queue) = (Producer::new(&client), str_of(&cmd, "queue").to_string());
                let request_id = cmd["request_id"].as_str().map(String::from);
                let context = match parse_traceparent(str_of(&cmd, "traceparent")) {
                    Some(sc) => opentelemetry::Context::new().with_remote_span_context(sc),
                    None => opentelemetry::Context::new(),
                };
                tokio::spawn(
                    async move {
                        let registered = match request_id {
                            Some(request_id) => producer.register_as(request_id, &queue, agents).await,
                            None => producer.register(&queue, agents).await,
                        };
                        match registered {
                            Ok(r) => emit(registered_event(&id, &r)),
                            Err(s) => emit(json!({"event": "failed", "id": id, "code": code_name(s.code())})),
                        }
                    }
                    .with_context(context),
                );
            }
            "worker" => {
                let mut worker = Worker::new(&client, str_of(&cmd, "queue"), str_of(&cmd, "worker_id"));
                worker.max_leases = cmd["concurrency"].as_u64().unwrap_or(1) as u32;
                worker.heartbeat_every = Duration::from_millis(cmd["heartbeat_ms"].as_u64().unwrap_or(3000));
                let handler = cmd["handler"].clone();
                let (stop, holds) = (CancellationToken::new(), Holds::default());
                let (w, h, results, steps) = (id.clone(), holds.clone(), worker.results(), worker.steps());
                let progress = worker.progress();
                let task = tokio::spawn(worker.run(stop.clone(), move |lease, cancelled| {
                    let (id, holds, handler, results) = (w.clone(), h.clone(), handler.clone(), results.clone());
                    let (steps, progress) = (steps.clone(), progress.clone());
                    async move {
                        let at =
                            |event: &str| json!({"event": event, "id": id, "name": lease.name, "token": lease.token});
                        let (finish, finished) = oneshot::channel();
                        if handler["mode"] == "hold" {
                            holds.lock().unwrap().insert(lease.name.clone(), finish);
                        }
                        let mut started = at("started");
                        started["parents"] = parents(&lease);
                        started["steps"] = lease.steps.iter().map(|s| s.name.clone()).collect();
                        started["lease_event"] = match &lease.event {
                            Some(e) => json!({"event": e.event, "payload": text(&e.payload), "timed_out": e.timed_out}),
                            None => Value::Null,
                        };
                        emit(started);
                        if handler["mode"] == "wait_for_event" {
                            let Some(e) = &lease.event else {
                                emit(at("waiting"));
                                let timeout = handler["timeout_ms"].as_u64().map(Duration::from_millis);
                                return Err(Failure::wait_for(str_of(&handler, "event"), timeout));
                            };
                            emit(at("finished"));
                            let result = match e.timed_out {
                                true => format!("timeout:{}", e.event),
                                false => format!("{}:{}", e.event, text(&e.payload)),
                            };
                            results.set(&lease, result);
                            return Ok(());
                        }
                        let mut failing = handler["mode"] == "fail";
                        let todo = if handler["mode"] == "steps" { handler["steps"].as_array().cloned() } else { None };
                        let todo = todo.unwrap_or_default();
                        for (i, step) in todo.iter().filter_map(|s| s.as_str()).enumerate() {
                            if Steps::recorded(&lease, step).is_some() {
                                continue;
                            }
                            if handler["progress"] == true {
                                progress.send(&lease, format!("{}/{}", i + 1, todo.len())).await;
                            }
                            let answer = steps.record(&lease, step, format!("r-{step}")).await?;
                            let mut recorded = at("step");
                            (recorded["step"], recorded["recorded"]) = (json!(step), json!(answer.recorded));
                            emit(recorded);
                            if handler["fail_after"] == step {
                                failing = true;
                                break;
                            }
                        }
                        match if failing { Some("fail") } else { handler["mode"].as_str() } {
                            Some("hold") => tokio::select! {
                                _ = finished => {}
                                _ = cancelled.cancelled() => {
                                    holds.lock().unwrap().remove(&lease.name);
                                    emit(at("cancelled"));
                                    return Ok(());
                                }
                            },
                            Some("fail") => {
                                emit(at("finished"));
                                let message = str_of(&handler, "message").to_string();
                                return Err(match handler["http_status"].as_u64() {
                                    Some(status) => Failure::from_http_status(status as u16, message),
                                    None => HandlerError(message).into(),
                                });
                            }
                            _ => {}
                        }
                        emit(at("finished"));
                        if let Some(result) = handler["result"].as_str() {
                            results.set(&lease, result.replace("{name}", &lease.name));
                        }
                        Ok(())
                    }
                }));
                workers.insert(id, RunningWorker { stop, holds, task });
            }
            "finish" | "finish_all" => {
                let Some(worker) = workers.get(&id) else {
                    emit(json!({"event": "error", "cmd": name, "message": format!("no worker {id}")}));
                    continue;
                };
                let mut holds = worker.holds.lock().unwrap();
                let finishing: Vec<_> = match name.as_str() {
                    "finish" => holds.remove(str_of(&cmd, "name")).into_iter().collect(),
                    _ => holds.drain().map(|(_, finish)| finish).collect(),
                };
                for finish in finishing {
                    let _ = finish.send(());
                }
            }
            "stop" => match workers.remove(&id) {
                Some(worker) => {
                    tokio::spawn(stop_worker(id, worker));
                }
                None => emit(json!({"event": "error", "cmd": name, "message": format!("no worker {id}")})),
            },
            "leader" => {
                let ttl = Duration::from_millis(cmd["ttl_ms"].as_u64().unwrap_or(3000));
                let leadership = Leadership::new(&client, str_of(&cmd, "election"), str_of(&cmd, "candidate_id"), ttl);
                let close = CancellationToken::new();
                let (mut term, held) = leadership.spawn(close.clone());
                let (l, closing) = (id.clone(), close.clone());
                let task = tokio::spawn(async move {
                    let mut leading: Option<u64> = None;
                    while term.changed().await.is_ok() {
                        let now = *term.borrow_and_update();
                        if let Some(token) = leading.filter(|t| Some(*t) != now) {
                            if !closing.is_cancelled() {
                                emit(json!({"event": "lost", "id": l, "token": token}));
                            }
                        }
                        if let Some(token) = now.filter(|t| Some(*t) != leading) {
                            emit(json!({"event": "elected", "id": l, "token": token}));
                        }
                        leading = now;
                    }
                    let _ = held.await;
                });
                leaders.insert(id, RunningLeader { close, task });
            }
            "close" => match leaders.remove(&id) {
                Some(leader) => {
                    tokio::spawn(close_leader(id, leader));
                }
                None => emit(json!({"event": "error", "cmd": name, "message": format!("no leader {id}")})),
            },
            "claim" => {
                let claimer = Claimer::new(&client, str_of(&cmd, "pool"), &id);
                let wait = Duration::from_millis(cmd["wait_ms"].as_u64().unwrap_or(0));
                let fail_with = cmd["fail_with"].as_str().map(String::from);
                tokio::spawn(async move {
                    let held = match claimer.claim(HashMap::new(), wait).await {
                        Ok(Some(held)) => held,
                        Ok(None) => return emit(json!({"event": "nothing", "id": id})),
                        Err(e) => {
                            let code = match &e {
                                baton_client::claim::ClaimError::Status(s) => code_name(s.code()),
                                baton_client::claim::ClaimError::LineFull { .. } => "RESOURCE_EXHAUSTED".into(),
                            };
                            return emit(json!({"event": "failed", "id": id, "code": code}));
                        }
                    };
                    emit(json!({"event": "claimed", "id": id, "resource_id": held.resource.id, "token": held.token}));
                    let ended = match fail_with {
                        Some(error) => held.fail(&error).await,
                        None => held.give_back(true).await,
                    };
                    match ended {
                        Ok(()) => emit(json!({"event": "ended", "id": id})),
                        Err(s) => emit(json!({"event": "failed", "id": id, "code": code_name(s.code())})),
                    }
                });
            }
            "call" | "await" => {
                let (producer, queue) = (Producer::new(&client), str_of(&cmd, "queue").to_string());
                let timeout = Some(Duration::from_millis(cmd["timeout_ms"].as_u64().unwrap_or(0)));
                let agent = agent_of(&cmd, str_of(&cmd, "name"));
                tokio::spawn(async move {
                    let answer = match name.as_str() {
                        "call" => producer.register_and_await(&queue, agent, timeout).await,
                        _ => producer.await_result(&queue, &agent.name, timeout, 0).await,
                    };
                    awaited(&id, answer);
                });
            }
            "signal" => {
                let (producer, c) = (Producer::new(&client), cmd.clone());
                tokio::spawn(async move {
                    let (queue, name, event) = (str_of(&c, "queue"), str_of(&c, "name"), str_of(&c, "event"));
                    let payload = str_of(&c, "payload").as_bytes().to_vec();
                    let answer = match c["request_id"].as_str() {
                        Some(request_id) => producer.signal_as(request_id.into(), queue, name, event, payload).await,
                        None => producer.signal(queue, name, event, payload).await,
                    };
                    emit(match answer {
                        Ok(r) => json!({"event": "signalled", "id": id, "delivered": r.delivered, "kept": r.kept,
                                        "duplicate": r.duplicate, "consumed": r.consumed}),
                        Err(s) => json!({"event": "failed", "id": id, "code": code_name(s.code())}),
                    });
                });
            }
            "watch" => {
                let (producer, c) = (Producer::new(&client), cmd.clone());
                tokio::spawn(async move {
                    let timeout = Duration::from_millis(c["timeout_ms"].as_u64().unwrap_or(10000));
                    let mut stream = match producer.watch(str_of(&c, "queue"), str_of(&c, "name"), timeout, 0).await {
                        Ok(stream) => stream,
                        Err(s) => return emit(json!({"event": "failed", "id": id, "code": code_name(s.code())})),
                    };
                    let names = |steps: &[pb::Step]| steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
                    while let Some(update) = stream.next().await {
                        let u = match update {
                            Ok(u) => u,
                            Err(s) => return emit(json!({"event": "failed", "id": id, "code": code_name(s.code())})),
                        };
                        emit(json!({"event": "watch_update", "id": id, "update": u.update().as_str_name(),
                                    "state": u.state().as_str_name(), "token": u.token, "sequence": u.sequence,
                                    "progress": u.progress, "steps": names(&u.steps)}));
                        if let Some(f) = u.finish.filter(|_| u.update == pb::WatchUpdate::Finished as i32) {
                            let r = f.result.unwrap_or_default();
                            return emit(
                                json!({"event": "watched", "id": id, "done": true, "finish": finish_name(r.finish),
                                               "result": text(&r.result), "steps": names(&f.steps)}),
                            );
                        }
                    }
                    emit(json!({"event": "watched", "id": id, "done": false}));
                });
            }
            "cancel" => {
                let mut agents = client.agents();
                let request = pb::CancelRunRequest {
                    queue: str_of(&cmd, "queue").into(),
                    name: str_of(&cmd, "name").into(),
                    cascade: cmd["cascade"].as_bool().unwrap_or(false),
                };
                tokio::spawn(async move {
                    emit(match agents.cancel_run(request).await {
                        Ok(r) => json!({"event": "cancel", "id": id, "requested": r.get_ref().requested,
                                        "cascaded": r.get_ref().cascaded}),
                        Err(s) => json!({"event": "failed", "id": id, "code": code_name(s.code())}),
                    });
                });
            }
            "batch" => {
                let producer = Producer::new(&client);
                let batch = Batch {
                    callback_queue: str_of(&cmd, "callback_queue").into(),
                    on_success: names_of(&cmd, "on_success").into_iter().map(|n| one_shot(n, vec![])).collect(),
                    on_complete: names_of(&cmd, "on_complete").into_iter().map(|n| one_shot(n, vec![])).collect(),
                    close: cmd["close"].as_bool().unwrap_or(false),
                    ..Batch::new(str_of(&cmd, "batch"), str_of(&cmd, "queue"))
                };
                let members = names_of(&cmd, "names").into_iter().map(|n| agent_of(&cmd, n)).collect();
                tokio::spawn(async move {
                    batch_event(
                        &id,
                        producer.register_batch(batch, members).await.map(|r| r.status.unwrap_or_default()),
                    );
                });
            }
            "close_batch" | "batch_status" => {
                let (producer, batch) = (Producer::new(&client), str_of(&cmd, "batch").to_string());
                tokio::spawn(async move {
                    let status = match name.as_str() {
                        "close_batch" => producer.close_batch(&batch).await,
                        _ => producer.batch(&batch).await,
                    };
                    batch_event(&id, status);
                });
            }
            _ => emit(json!({"event": "error", "cmd": name, "message": "unknown command"})),
        }
    }
    // stdin ended: everything stops gracefully.
    let stops = workers.into_iter().map(|(id, w)| tokio::spawn(stop_worker(id, w)));
    let closes = leaders.into_iter().map(|(id, l)| tokio::spawn(close_leader(id, l)));
    for task in stops.chain(closes).collect::<Vec<_>>() {
        let _ = task.await;
    }
}

async fn stop_worker(id: String, worker: RunningWorker) {
    worker.stop.cancel();
    match worker.task.await {
        Ok(Ok(())) => emit(json!({"event": "stopped", "id": id})),
        Ok(Err(s)) => emit(json!({"event": "error", "cmd": "stop", "message": s.to_string()})),
        Err(e) => emit(json!({"event": "error", "cmd": "stop", "message": e.to_string()})),
    }
}

async fn close_leader(id: String, leader: RunningLeader) {
    leader.close.cancel();
    let _ = leader.task.await;
    emit(json!({"event": "closed", "id": id}));
}
