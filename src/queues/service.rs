//! AgentService: Register, Unregister, Acquire, Heartbeat, Complete, Release, GetAgent,
//! ListAgents.

use std::{collections::HashSet, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pb::agent_service_server::AgentService;
use crate::queues::leases::{agent_pb, beat_answer, complete_pb, complete_results, completion, lease_pb};
use crate::queues::session;
use crate::queues::store::Queues;
use crate::queues::store::{AgentDef, AgentState, Completion, PagePosition};
use crate::queues::wait;
use crate::queues::watch;
use crate::rpc::auth;
use crate::rpc::validate;
use crate::rpc::{observe, observe_call, timestamp, waits};
use crate::store::wake::Wakeups;
use crate::{pb, store};

pub(crate) struct AgentServiceImpl {
    pub(crate) store: Queues,
    pub(crate) wakeups: Wakeups,
    pub(crate) config: Arc<Config>,
    /// Cancelled when the server begins a graceful shutdown: long polls answer at once.
    pub(crate) shutdown: CancellationToken,
    /// Places for new work (Acquire, Register), shared by the replica's services.
    pub(crate) admission: crate::rpc::admission::Admission,
}

/// Priorities run from -MAX_PRIORITY to MAX_PRIORITY (acquireAgents ranks them in 4 digits).
const MAX_PRIORITY: i32 = 1000;

/// An agent's expiry (`expire_at`, `ttl`): (expire at ms, ttl ms), 0 for none. One-shot agents
/// only, one of the two; a time already past is accepted (the agent expires without running:
/// Baton compares no time with its own clock).
fn expiry(field: &str, a: &pb::Agent, recurring: bool, max_ms: u64) -> Result<(i64, u64)> {
    let which = match (&a.expire_at, &a.ttl) {
        (None, None) => return Ok((0, 0)),
        (Some(_), Some(_)) => return Err(Error::invalid(format!("{field}.ttl"), "must be absent with expire_at")),
        (Some(_), None) => "expire_at",
        (None, Some(_)) => "ttl",
    };
    if recurring {
        return Err(Error::invalid(
            format!("{field}.{which}"),
            "applies to one-shot agents only (no interval, no cron)",
        ));
    }
    if let Some(t) = &a.expire_at {
        if t.seconds <= 0 || !(0..1_000_000_000).contains(&t.nanos) {
            return Err(Error::invalid(format!("{field}.expire_at"), "must be a time after 1970-01-01T00:00:00Z"));
        }
        let ms = t.seconds.saturating_mul(1000).saturating_add(i64::from(t.nanos) / 1_000_000);
        return Ok((ms, 0));
    }
    match validate::duration_ms(&format!("{field}.ttl"), a.ttl.as_ref(), max_ms)? {
        Some(ms) if ms > 0 => Ok((0, ms)),
        _ => Err(Error::invalid(format!("{field}.ttl"), "must be at least 1 ms")),
    }
}

impl AgentServiceImpl {
    pub(crate) fn new(
        store: Queues,
        wakeups: Wakeups,
        config: Arc<Config>,
        shutdown: CancellationToken,
        admission: crate::rpc::admission::Admission,
    ) -> Self {
        Self { store, wakeups, config, shutdown, admission }
    }

    /// Checks one agent of a Register; `incoming` is the call's trace context (`trace::incoming`).
    fn agent_def(&self, field: &str, a: &pb::Agent, incoming: &str) -> Result<AgentDef> {
        let limits = &self.config.limits;
        let defaults = &self.config.agent;
        let max = limits.max_duration_ms;
        validate::agent_name(&format!("{field}.name"), &a.name)?;
        let interval_ms = validate::duration_ms(&format!("{field}.interval"), a.interval.as_ref(), max)?.unwrap_or(0);
        let timeout_ms = validate::duration_ms(&format!("{field}.timeout"), a.timeout.as_ref(), max)?
            .unwrap_or(defaults.default_timeout_ms);
        if timeout_ms == 0 {
            return Err(Error::invalid(format!("{field}.timeout"), "must be at least 1 ms"));
        }
        let error_interval_ms =
            validate::duration_ms(&format!("{field}.error_interval"), a.error_interval.as_ref(), max)?
                .unwrap_or(defaults.default_error_interval_ms);
        validate::size(&format!("{field}.payload"), a.payload.len(), limits.max_payload_bytes)?;
        validate::count(&format!("{field}.labels"), a.labels.len(), 0, limits.max_labels)?;
        for (k, v) in &a.labels {
            if k.is_empty() {
                return Err(Error::invalid(format!("{field}.labels"), "keys must not be empty"));
            }
            validate::size(&format!("{field}.labels[{k}]"), k.len().max(v.len()), limits.max_label_bytes)?;
        }
        let catch_up_skip = match pb::CatchUp::try_from(a.catch_up) {
            Ok(pb::CatchUp::Skip) => true,
            Ok(_) => false,
            Err(_) => return Err(Error::invalid(format!("{field}.catch_up"), format!("unknown value {}", a.catch_up))),
        };
        if !a.key.is_empty() {
            validate::name(&format!("{field}.key"), &a.key)?;
        }
        if !(-MAX_PRIORITY..=MAX_PRIORITY).contains(&a.priority) {
            return Err(Error::invalid(
                format!("{field}.priority"),
                format!("must be from -{MAX_PRIORITY} to {MAX_PRIORITY}, got {}", a.priority),
            ));
        }
        crate::trace::check_field(&format!("{field}.traceparent"), &a.traceparent)?;
        if a.cron.is_empty() {
            if !a.time_zone.is_empty() || catch_up_skip {
                let which = if a.time_zone.is_empty() { "catch_up" } else { "time_zone" };
                return Err(Error::invalid(format!("{field}.{which}"), "applies only with cron"));
            }
        } else {
            if interval_ms > 0 {
                return Err(Error::invalid(format!("{field}.interval"), "must be absent with cron"));
            }
            validate::size(&format!("{field}.cron"), a.cron.len(), 256)?;
            validate::size(&format!("{field}.time_zone"), a.time_zone.len(), 64)?;
            // Checked here; the first fire is the store's to compute, from the Redis clock.
            crate::queues::cron::Schedule::parse(&a.cron, &a.time_zone).map_err(|(expr, why)| {
                Error::invalid(format!("{field}.{}", if expr { "cron" } else { "time_zone" }), why)
            })?;
        }
        let (expire_at_ms, ttl_ms) = expiry(field, a, interval_ms > 0 || !a.cron.is_empty(), max)?;
        let wait_for = match &a.wait_for {
            None => None,
            Some(w) => {
                let wait = crate::queues::leases::wait_for(limits, &format!("{field}.wait_for"), w)?;
                if !a.after.is_empty() || expire_at_ms > 0 || ttl_ms > 0 {
                    return Err(Error::invalid(
                        format!("{field}.wait_for"),
                        "must be absent with after, expire_at or ttl (a wait has a time of its own: until, timeout)",
                    ));
                }
                Some(wait)
            }
        };
        Ok(AgentDef {
            name: a.name.clone(),
            key: a.key.clone(),
            priority: a.priority,
            interval_ms,
            timeout_ms,
            error_interval_ms,
            max_attempts: a.max_attempts,
            keep_result: a.keep_result,
            labels: a.labels.clone().into_iter().collect(),
            payload: a.payload.clone(),
            cron: a.cron.clone(),
            time_zone: a.time_zone.clone(),
            catch_up_skip,
            first_fire_ms: None,
            traceparent: crate::trace::for_item(&a.traceparent, incoming),
            parents: 0,
            parent_traceparents: Default::default(),
            after: Vec::new(),
            idempotency: None,
            expire_at_ms,
            ttl_ms,
            wait_for,
        })
    }

    /// The agents of one list of a request (`list` names it: "agents", "on_success"), each
    /// checked as Register checks them, with its parents and idempotency key; `seen` catches a
    /// name given twice in one queue.
    fn defs(
        &self,
        queue: &str,
        list: &str,
        agents: &[pb::Agent],
        incoming: &str,
        seen: &mut HashSet<String>,
    ) -> Result<Vec<AgentDef>> {
        validate::count(list, agents.len(), 0, self.max_batch())?;
        let mut defs = Vec::with_capacity(agents.len());
        for (i, a) in agents.iter().enumerate() {
            let field = format!("{list}[{i}]");
            let mut def = self.agent_def(&field, a, incoming)?;
            if !seen.insert(format!("{queue}|{}", def.name)) {
                return Err(Error::invalid(format!("{field}.name"), format!("{:?} is listed twice", def.name)));
            }
            crate::queues::parents::parents_and_key(&self.store.flows, &self.config, queue, &field, a, &mut def)?;
            defs.push(def);
        }
        if defs.iter().any(|d| !d.after.is_empty()) {
            crate::queues::parents::check_cycles(queue, &self.store.flows, list, &defs)?;
        }
        Ok(defs)
    }

    fn wait(&self, wait: Option<&prost_types::Duration>) -> Result<Duration> {
        let ms = validate::wait_ms("wait", wait, self.config.limits.max_wait_ms)?;
        Ok(Duration::from_millis(ms))
    }

    /// A Register refused after its parents were checked writes nothing: the marks the check
    /// made go (a failure to take them back only keeps those parents' next finish).
    async fn take_back(&self, marks: &crate::flows::store::Marks) {
        if marks.is_empty() {
            return;
        }
        if let Err(e) = self.store.flows.unmark(marks).await {
            tracing::warn!(error = %e, "taking back parents' marks of a refused Register");
        }
    }

    /// [`Self::take_back`] when `e` refused the call (nothing of it was written); after any other
    /// error the marks stay (the call may have been applied).
    async fn unmark_refused(&self, e: &Error, marks: &crate::flows::store::Marks) {
        if matches!(e, Error::ParentsFixed { .. } | Error::Overloaded { .. }) {
            self.take_back(marks).await;
        }
    }

    pub(crate) fn max_batch(&self) -> usize {
        self.config.limits.max_batch as usize
    }

    /// A completion, validated; errors name its own fields (a batch places them: `Error::within`).
    pub(crate) fn completion(&self, r: pb::CompleteRequest) -> Result<Completion> {
        completion(&self.config.limits, r)
    }
}

/// Links the current call's span (Register, RegisterBatch) to the parents' trace contexts of
/// the agents it created (`done.items` answers `defs`, in order), when tracing is on.
fn link_created(defs: &[AgentDef], done: &crate::flows::store::RegisterAnswer) {
    if !crate::trace::enabled() {
        return;
    }
    let created = defs.iter().zip(&done.items).filter(|(_, item)| item.created).map(|(d, _)| d);
    crate::trace::link_current(created.flat_map(|d| d.parent_traceparents.values()).map(String::as_str));
}

/// Names the request's field of a `ParentsFixed` refusal (`<list>[i].after`), by its agent.
fn parents_fixed_field(e: Error, list: &str, defs: &[AgentDef]) -> Error {
    match e {
        Error::ParentsFixed { agent, message, .. } => {
            let field = match defs.iter().position(|d| d.name == agent) {
                Some(i) => format!("{list}[{i}].after"),
                None => "after".to_string(),
            };
            Error::ParentsFixed { agent, field, message }
        }
        e => e,
    }
}

fn status_pb(info: crate::queues::store::AgentInfo) -> pb::AgentStatus {
    let state = match info.state {
        AgentState::Waiting => pb::AgentState::Waiting,
        AgentState::Working => pb::AgentState::Working,
        AgentState::DeadLettered => pb::AgentState::DeadLettered,
        AgentState::WaitingForEvent => pb::AgentState::WaitingForEvent,
        // In no set: a child waiting for its parents (GetAgent confirms it from its parents).
        AgentState::Detached if info.def.parents > 0 => pb::AgentState::Blocked,
        AgentState::Detached => pb::AgentState::Unspecified,
    };
    let context = |keys: &[&str]| {
        let c = info.dead_letter.as_ref();
        keys.iter().find_map(|k| c.and_then(|c| c.get(*k)).and_then(|v| v.as_str())).unwrap_or("").to_string()
    };
    let (last_error_class, last_error_message) = match info.dead_letter {
        Some(_) => {
            let class = context(&["outcome", "error_class"]);
            (if class.is_empty() { "FAILED".into() } else { class }, context(&["message", "error"]))
        }
        None => (String::new(), String::new()),
    };
    pb::AgentStatus {
        agent: Some(agent_pb(info.def)),
        state: state as i32,
        next_run_at: info.next_run_ms.map(timestamp),
        deadline: info.deadline_ms.map(timestamp),
        holder: info.holder.unwrap_or_default(),
        token: info.token.unwrap_or(0),
        failure_streak: info.streak,
        progress: info.progress,
        cancel_requested: info.cancel_requested,
        last_error_class,
        last_error_message,
        parents: Vec::new(),
        parents_total: 0,
        parents_pending: 0,
        children: Vec::new(),
        steps: info.steps.into_iter().map(crate::queues::leases::step_pb).collect(),
        waiting_for: info.waiting_for.map(|w| pb::WaitFor {
            event: w.event,
            until: (w.until_ms > 0).then(|| timestamp(w.until_ms)),
            timeout: None,
        }),
        signals_pending: info.signals_pending,
    }
}

/// A Signal's answer, as the metric labels it.
fn signal_answer(r: &pb::SignalResponse) -> &'static str {
    match (r.delivered, r.duplicate) {
        (true, _) => "delivered",
        (_, true) => "duplicate",
        _ => "kept",
    }
}

/// Most parents and children GetAgent lists.
const FAMILY_LISTED: usize = 1_000;

#[tonic::async_trait]
impl AgentService for AgentServiceImpl {
    async fn register(&self, request: Request<pb::RegisterRequest>) -> Result<Response<pb::RegisterResponse>, Status> {
        observe("Register", async {
            auth::authorize(&request)?;
            let incoming = crate::trace::incoming(request.metadata());
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::count("agents", req.agents.len(), 1, self.max_batch())?;
            validate::request_id("request_id", &req.request_id)?;
            let mut seen = HashSet::new();
            let mut defs = Vec::with_capacity(req.agents.len());
            for (i, a) in req.agents.iter().enumerate() {
                let field = format!("agents[{i}]");
                let mut def = self.agent_def(&field, a, &incoming)?;
                if !seen.insert(def.name.clone()) {
                    return Err(Error::invalid(format!("agents[{i}].name"), format!("{:?} is listed twice", def.name)));
                }
                crate::queues::parents::parents_and_key(
                    &self.store.flows,
                    &self.config,
                    &req.queue,
                    &field,
                    a,
                    &mut def,
                )?;
                defs.push(def);
            }
            let mut marks = Vec::new();
            if defs.iter().any(|d| !d.after.is_empty()) {
                crate::queues::parents::check_cycles(&req.queue, &self.store.flows, "agents", &defs)?;
                marks = crate::queues::parents::check_parents_exist(&req.queue, &self.store.flows, "agents", &mut defs)
                    .await?;
            }
            let done = match self.admission.admit("Register") {
                Ok(_place) => self.store.register(&req.queue, &defs, req.reset_schedule, &req.request_id).await,
                Err(e) => Err(e),
            };
            let done = match done {
                Ok(done) => done,
                Err(e) => {
                    self.unmark_refused(&e, &marks).await;
                    return Err(parents_fixed_field(e, "agents", &defs));
                }
            };
            link_created(&defs, &done);
            metrics::counter!("baton_agents_registered_total", "queue" => req.queue.clone())
                .increment(done.created as u64);
            if done.deduplicated > 0 {
                metrics::counter!("baton_agents_deduplicated_total", "queue" => req.queue.clone())
                    .increment(done.deduplicated as u64);
            }
            let agents = done
                .items
                .into_iter()
                .map(|item| pb::RegisteredAgent {
                    result: item.finish.map(|f| crate::flows::service::result_pb(&req.queue, &item.name, f)),
                    name: item.name,
                    created: item.created,
                    deduplicated: item.deduplicated,
                    replaced: item.replaced,
                    debounced: item.debounced,
                })
                .collect();
            Ok(Response::new(pb::RegisterResponse {
                created: done.created,
                updated: done.updated,
                deduplicated: done.deduplicated,
                agents,
            }))
        })
        .await
    }

    async fn unregister(
        &self,
        request: Request<pb::UnregisterRequest>,
    ) -> Result<Response<pb::UnregisterResponse>, Status> {
        observe("Unregister", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::count("names", req.names.len(), 1, self.max_batch())?;
            for (i, name) in req.names.iter().enumerate() {
                validate::agent_name(&format!("names[{i}]"), name)?;
            }
            let (removed, cascaded) = self.store.unregister(&req.queue, &req.names, req.cascade).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                queue = req.queue,
                names = req.names.len(),
                removed,
                cascade = req.cascade,
                cascaded,
                "unregister"
            );
            Ok(Response::new(pb::UnregisterResponse { removed, cascaded }))
        })
        .await
    }

    async fn acquire(&self, request: Request<pb::AcquireRequest>) -> Result<Response<pb::AcquireResponse>, Status> {
        observe_call("Acquire", waits(&request.get_ref().wait), async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::name("worker_id", &req.worker_id)?;
            let max = req.max_leases.max(1);
            if max as usize > self.max_batch() {
                return Err(Error::invalid("max_leases", format!("must be at most {}", self.max_batch())));
            }
            let wait = self.wait(req.wait.as_ref())?;
            let place = self.admission.admit("Acquire")?;
            // A long poll holds no place while it waits.
            let _place = if wait.is_zero() { Some(place) } else { None };
            // Listed among the open connections while it waits (the console's workers view).
            let _listed = (!wait.is_zero()).then(|| {
                crate::rpc::workers::register(
                    crate::rpc::workers::Kind::LongPoll,
                    &req.queue,
                    &req.worker_id,
                    max as usize,
                )
            });
            let leases =
                wait::acquire(&self.store, &self.wakeups, &self.shutdown, &req.queue, &req.worker_id, max, wait)
                    .await?;
            // Counted when something was granted: a poll of a made-up queue adds no series.
            if !leases.is_empty() {
                metrics::counter!("baton_agents_acquired_total", "queue" => req.queue.clone())
                    .increment(leases.len() as u64);
            }
            crate::trace::link_current(
                leases.iter().flat_map(|l| l.def.parent_traceparents.values()).map(String::as_str),
            );
            let leases = leases.into_iter().map(|l| lease_pb(&req.queue, l, &caller)).collect();
            Ok(Response::new(pb::AcquireResponse { leases }))
        })
        .await
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        observe("Heartbeat", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("worker_id", &req.worker_id)?;
            validate::count("leases", req.leases.len(), 0, self.max_batch())?;
            for (i, l) in req.leases.iter().enumerate() {
                validate::name(&format!("leases[{i}].queue"), &l.queue)?;
                validate::agent_name(&format!("leases[{i}].name"), &l.name)?;
                validate::token(&format!("leases[{i}].token"), l.token)?;
                validate::progress(&format!("leases[{i}].progress"), &l.progress)?;
            }
            // One script per queue: a queue's keys share a slot, different queues may not.
            let mut by_queue: Vec<(&str, Vec<&pb::LeaseRef>)> = Vec::new();
            for l in &req.leases {
                match by_queue.iter_mut().find(|(q, _)| *q == l.queue) {
                    Some((_, v)) => v.push(l),
                    None => by_queue.push((&l.queue, vec![l])),
                }
            }
            let deadlines = futures::future::try_join_all(by_queue.iter().map(|(queue, leases)| {
                let items: Vec<crate::queues::store::HeartbeatItem> =
                    leases.iter().map(|l| (l.name.as_str(), l.token, l.progress.as_str())).collect();
                let worker = req.worker_id.as_str();
                async move { self.store.heartbeat(queue, worker, &items).await }
            }))
            .await?;
            let mut response = pb::HeartbeatResponse::default();
            for ((_, leases), deadlines) in by_queue.into_iter().zip(deadlines) {
                for (l, beat) in leases.into_iter().zip(deadlines) {
                    let answer = (&mut response.extended, &mut response.lost, &mut response.cancelled);
                    beat_answer(&l.queue, &l.name, l.token, beat, answer);
                }
            }
            if !response.lost.is_empty() {
                metrics::counter!("baton_leases_lost_total", "rpc" => "Heartbeat")
                    .increment(response.lost.len() as u64);
            }
            Ok(Response::new(response))
        })
        .await
    }

    async fn complete(&self, request: Request<pb::CompleteRequest>) -> Result<Response<pb::CompleteResponse>, Status> {
        observe("Complete", async {
            auth::authorize(&request)?;
            let r = request.into_inner();
            let c = self.completion(r)?;
            let done = self.store.complete(&c).await.inspect_err(|e| {
                if matches!(e, Error::LeaseLost(_)) {
                    metrics::counter!("baton_leases_lost_total", "rpc" => "Complete").increment(1);
                }
            })?;
            if !done.replayed {
                metrics::counter!("baton_agents_completed_total", "queue" => c.queue.clone(), "outcome" => c.outcome.as_str())
                    .increment(1);
            }
            Ok(Response::new(complete_pb(&c, done.how)))
        })
        .await
    }

    async fn complete_batch(
        &self,
        request: Request<pb::CompleteBatchRequest>,
    ) -> Result<Response<pb::CompleteBatchResponse>, Status> {
        observe("CompleteBatch", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::count("completions", req.completions.len(), 1, self.max_batch())?;
            let items = req
                .completions
                .into_iter()
                .enumerate()
                .map(|(i, r)| self.completion(r).map_err(|e| e.within(format_args!("completions[{i}]."))))
                .collect::<Result<Vec<_>>>()?;
            let done = self.store.complete_batch(&items).await?;
            Ok(Response::new(pb::CompleteBatchResponse { results: complete_results(&items, done) }))
        })
        .await
    }

    type SessionStream = session::SessionStream;

    async fn session(
        &self,
        request: Request<tonic::Streaming<pb::SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        observe(
            "Session",
            session::open(
                &session::Opener {
                    store: &self.store,
                    wakeups: &self.wakeups,
                    config: &self.config,
                    shutdown: &self.shutdown,
                },
                request,
            ),
        )
        .await
    }

    async fn release(&self, request: Request<pb::ReleaseRequest>) -> Result<Response<pb::ReleaseResponse>, Status> {
        observe("Release", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::agent_name("name", &req.name)?;
            validate::token("token", req.token)?;
            let delay_ms =
                validate::duration_ms("delay", req.delay.as_ref(), self.config.limits.max_duration_ms)?.unwrap_or(0);
            let next = self.store.release(&req.queue, &req.name, req.token, delay_ms).await.inspect_err(|e| {
                if matches!(e, Error::LeaseLost(_)) {
                    metrics::counter!("baton_leases_lost_total", "rpc" => "Release").increment(1);
                }
            })?;
            Ok(Response::new(pb::ReleaseResponse { next_run_at: next.map(timestamp) }))
        })
        .await
    }

    async fn record_step(
        &self,
        request: Request<pb::RecordStepRequest>,
    ) -> Result<Response<pb::RecordStepResponse>, Status> {
        observe("RecordStep", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            let limits = &self.config.limits;
            validate::name("queue", &req.queue)?;
            crate::queues::leases::check_step(limits, "", &req.name, req.token, &req.step, &req.result)?;
            let answer = self.store.record_step(&req.queue, &req.name, req.token, &req.step, &req.result).await?;
            if answer == crate::queues::store::StepAnswer::Lost {
                metrics::counter!("baton_leases_lost_total", "rpc" => "RecordStep").increment(1);
            }
            let lease = (req.queue.as_str(), req.name.as_str(), req.token);
            let response = crate::queues::leases::step_answer(limits, "", lease, &req.step, req.result, answer)?;
            Ok(Response::new(response))
        })
        .await
    }

    type WatchAgentStream = watch::WatchAgentStream;

    async fn watch_agent(
        &self,
        request: Request<pb::WatchAgentRequest>,
    ) -> Result<Response<Self::WatchAgentStream>, Status> {
        observe("WatchAgent", async {
            auth::authorize(&request)?;
            let grant = auth::grant(&request).map(|g| g.scoped(request.get_ref()));
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::agent_name("name", &req.name)?;
            // Absent or zero: as long as the server lets a wait be (limits.max_wait_ms).
            let wait = match self.wait(req.wait.as_ref())? {
                w if w.is_zero() => Duration::from_millis(self.config.limits.max_wait_ms),
                w => w,
            };
            let shard = self.store.shard_of(crate::store::SourceKind::Queue, &req.queue, &req.name).into_owned();
            let opener = watch::Opener { store: &self.store, wakeups: &self.wakeups, shutdown: &self.shutdown };
            let rx = watch::open(
                &opener,
                watch::Watch { queue: req.queue, shard, name: req.name, after_token: req.after_token, wait },
            )
            .await?;
            // Ended by a reload that revokes the caller (its task sees the receiver dropped).
            Ok(Response::new(auth::guard(grant, watch::stream(rx))))
        })
        .await
    }

    async fn signal(&self, request: Request<pb::SignalRequest>) -> Result<Response<pb::SignalResponse>, Status> {
        observe("Signal", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::agent_name("name", &req.name)?;
            validate::name("event", &req.event)?;
            validate::size("payload", req.payload.len(), self.config.limits.max_payload_bytes)?;
            validate::request_id("request_id", &req.request_id)?;
            use crate::queues::store::Signalled;
            let answer = self.store.signal(&req.queue, &req.name, &req.event, &req.payload, &req.request_id).await?;
            let at = |ms: i64| Some(timestamp(ms));
            let response = match answer {
                Signalled::NotFound => {
                    return Err(Error::NotFound(format!("agent {:?} in queue {:?}", req.name, req.queue)))
                }
                Signalled::TooMany(kept) => {
                    return Err(Error::SignalsFull(format!(
                        "the run of {:?} keeps {kept} signals: limits.max_pending_signals ({}) allows no more",
                        req.name, self.config.limits.max_pending_signals
                    )))
                }
                Signalled::Delivered(ms) => {
                    pb::SignalResponse { delivered: true, sent_at: at(ms), ..Default::default() }
                }
                Signalled::Kept(ms) => pb::SignalResponse { kept: true, sent_at: at(ms), ..Default::default() },
                Signalled::AlreadyKept(ms) => {
                    pb::SignalResponse { kept: true, duplicate: true, sent_at: at(ms), ..Default::default() }
                }
                Signalled::AlreadyConsumed(ms) => {
                    pb::SignalResponse { duplicate: true, consumed: true, sent_at: at(ms), ..Default::default() }
                }
            };
            metrics::counter!("baton_signals_total", "queue" => req.queue.clone(), "answer" => signal_answer(&response))
                .increment(1);
            Ok(Response::new(response))
        })
        .await
    }

    async fn cancel_run(
        &self,
        request: Request<pb::CancelRunRequest>,
    ) -> Result<Response<pb::CancelRunResponse>, Status> {
        observe("CancelRun", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::agent_name("name", &req.name)?;
            let (token, cascaded) = self.store.cancel_run(&req.queue, &req.name, req.cascade).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                queue = req.queue,
                agent = req.name,
                requested = token.is_some(),
                cascade = req.cascade,
                cascaded,
                "cancel run"
            );
            Ok(Response::new(pb::CancelRunResponse { requested: token.is_some(), token: token.unwrap_or(0), cascaded }))
        })
        .await
    }

    async fn get_agent(&self, request: Request<pb::GetAgentRequest>) -> Result<Response<pb::GetAgentResponse>, Status> {
        observe("GetAgent", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::agent_name("name", &req.name)?;
            let info = self
                .store
                .get_agent(&req.queue, &req.name)
                .await?
                .ok_or_else(|| Error::NotFound(format!("agent {:?} in queue {:?}", req.name, req.queue)))?;
            let parents = info.def.parents;
            let mut status = status_pb(info);
            let shard = self.store.shard_of(crate::store::SourceKind::Queue, &req.queue, &req.name).into_owned();
            let family =
                self.store.flows.family(&shard, &[req.name.as_str()], FAMILY_LISTED).await?.pop().unwrap_or_default();
            if family.pending > 0 {
                status.state = pb::AgentState::Blocked as i32;
            }
            status.parents_total = family.parents.len().max(parents as usize) as u32;
            status.parents_pending = family.pending;
            // Counted whole above; listed only within the caller's scopes (`flows::shown`).
            status.parents = family
                .parents
                .into_iter()
                .filter(|(q, ..)| crate::flows::service::shown(&caller, q))
                .take(FAMILY_LISTED)
                .map(|(q, n, policy, finish)| pb::ParentStatus {
                    result: finish.map(|f| crate::flows::service::result_pb(&q, &n, f)),
                    parent: Some(crate::flows::service::parent_ref_pb(&q, &n, Some(policy))),
                })
                .collect();
            // The definition names its parents as Register took them (Agent.after).
            if let Some(agent) = status.agent.as_mut() {
                agent.after = status.parents.iter().filter_map(|p| p.parent.clone()).collect();
            }
            status.children = (family.children.into_iter())
                .filter(|(q, _)| crate::flows::service::shown(&caller, q))
                .map(|(q, n)| crate::flows::service::parent_ref_pb(&q, &n, None))
                .collect();
            Ok(Response::new(pb::GetAgentResponse { agent: Some(status) }))
        })
        .await
    }

    async fn r#await(&self, request: Request<pb::AwaitRequest>) -> Result<Response<pb::AwaitResponse>, Status> {
        observe_call("Await", waits(&request.get_ref().wait), async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            validate::agent_name("name", &req.name)?;
            let wait = self.wait(req.wait.as_ref())?;
            let shard = self.store.shard_of(crate::store::SourceKind::Queue, &req.queue, &req.name).into_owned();
            let deadline = tokio::time::Instant::now() + wait;
            // Followed before the first read, so a finish in between still wakes this call.
            let waiter = if wait.is_zero() { None } else { Some(self.wakeups.await_finish(&shard, &req.name).await?) };
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let (finish, state, keeps, steps) =
                    self.store.flows.await_read(&shard, &req.name, left.as_millis() as u64).await?;
                if let Some(f) = finish.filter(|f| f.token == 0 || f.token > req.after_token) {
                    // The steps kept with this finish: those kept with its token and time (an
                    // earlier finish of the name may have left its own).
                    let steps = crate::queues::records::StepRecord::parse_kept(&steps)
                        .filter(|(token, at_ms, _)| *token == f.token && *at_ms == f.at_ms)
                        .map(|(_, _, steps)| steps.into_iter().map(crate::queues::leases::step_pb).collect())
                        .unwrap_or_default();
                    return Ok(Response::new(pb::AwaitResponse {
                        done: true,
                        result: Some(crate::flows::service::result_pb(&shard, &req.name, f)),
                        state: 0,
                        result_not_kept: false,
                        steps,
                    }));
                }
                if state == crate::flows::store::AwaitState::Missing {
                    return Err(Error::NotFound(format!(
                        "agent {:?} in queue {:?}: no such agent, and no finish of it is kept (an agent \
                         that finished without keep_result, an awaiter or children keeps none)",
                        req.name, req.queue
                    )));
                }
                let not_done = pb::AwaitResponse {
                    done: false,
                    result: None,
                    state: crate::flows::service::await_state_pb(state) as i32,
                    result_not_kept: !keeps,
                    steps: Vec::new(),
                };
                let Some(waiter) = &waiter else { return Ok(Response::new(not_done)) };
                if left.is_zero() {
                    return Ok(Response::new(not_done));
                }
                tokio::select! {
                    _ = waiter.notify.notified() => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                    _ = self.shutdown.cancelled() => return Ok(Response::new(not_done)),
                }
            }
        })
        .await
    }

    async fn register_batch(
        &self,
        request: Request<pb::RegisterBatchRequest>,
    ) -> Result<Response<pb::RegisterBatchResponse>, Status> {
        observe("RegisterBatch", async {
            let caller = auth::authorize(&request)?;
            let incoming = crate::trace::incoming(request.metadata());
            let req = request.into_inner();
            validate::name("batch", &req.batch)?;
            validate::name("queue", &req.queue)?;
            let callback_queue =
                if req.callback_queue.is_empty() { req.queue.clone() } else { req.callback_queue.clone() };
            validate::name("callback_queue", &callback_queue)?;
            let mut seen = HashSet::new();
            let mut members = self.defs(&req.queue, "agents", &req.agents, &incoming, &mut seen)?;
            // A member may finish before the batch is attached to it: its finish is kept for the
            // batch to count.
            members.iter_mut().for_each(|d| d.keep_result = true);
            let mut on_success = self.defs(&callback_queue, "on_success", &req.on_success, &incoming, &mut seen)?;
            let mut on_complete = self.defs(&callback_queue, "on_complete", &req.on_complete, &incoming, &mut seen)?;
            let shard = |queue: &str, name: &str| {
                self.store.shard_of(crate::store::SourceKind::Queue, queue, name).into_owned()
            };
            let callbacks: Vec<(String, String)> = on_success
                .iter()
                .chain(&on_complete)
                .map(|d| (shard(&callback_queue, &d.name), d.name.clone()))
                .collect();
            // Refused before anything is written: a closed batch, other callbacks.
            if let Some(b) = self.store.flows.read_batch(&req.batch).await? {
                if b.closed {
                    return Err(Error::BatchClosed(format!("batch {:?} is closed: no member may be added", req.batch)));
                }
                let recorded: Vec<(&str, &str)> = b.callbacks.iter().map(|(q, n)| (q.as_str(), n.as_str())).collect();
                let given: Vec<(&str, &str)> =
                    callbacks.iter().map(|(q, n)| (store::shards::logical(q), n.as_str())).collect();
                if !callbacks.is_empty() && recorded != given {
                    return Err(Error::invalid(
                        "on_success",
                        "the batch exists: callbacks are given when it is created",
                    ));
                }
            }
            // Parents last among the checks: they mark the parents (check_parents_exist), and a
            // call refused after that takes the marks back.
            let flows = &self.store.flows;
            let mut marks =
                crate::queues::parents::check_parents_exist(&req.queue, flows, "agents", &mut members).await?;
            for (list, defs) in [("on_success", &mut on_success), ("on_complete", &mut on_complete)] {
                match crate::queues::parents::check_parents_exist(&callback_queue, flows, list, defs).await {
                    Ok(m) => marks.extend(m),
                    Err(e) => {
                        self.take_back(&marks).await;
                        return Err(e);
                    }
                }
            }
            let _place = match self.admission.admit("RegisterBatch") {
                Ok(place) => place,
                Err(e) => {
                    self.unmark_refused(&e, &marks).await;
                    return Err(e);
                }
            };
            // Members first (a crash after leaves them out of the batch; a retry adds them),
            // then the batch counts them — the key's holder for a deduplicated one.
            let done = if members.is_empty() {
                crate::flows::store::RegisterAnswer::default()
            } else {
                match self.store.register(&req.queue, &members, false, "").await {
                    Ok(done) => done,
                    Err(e) => {
                        self.unmark_refused(&e, &marks).await;
                        return Err(parents_fixed_field(e, "agents", &members));
                    }
                }
            };
            link_created(&members, &done);
            let joined: Vec<(String, String)> =
                done.items.iter().map(|i| (shard(&req.queue, &i.name), i.name.clone())).collect();
            let opened = self.store.flows.open_batch(&req.batch, &callbacks, &joined, false).await?;
            self.store.flows.join_batch(&req.batch, &joined).await?;
            if !callbacks.is_empty() {
                let sentinel = |policy| crate::flows::store::ParentRef {
                    queue: crate::flows::batches::batch_queue(&req.batch),
                    name: req.batch.clone(),
                    policy,
                };
                on_success.iter_mut().for_each(|d| d.after.push(sentinel(crate::flows::store::ParentPolicy::Cancel)));
                on_complete
                    .iter_mut()
                    .for_each(|d| d.after.push(sentinel(crate::flows::store::ParentPolicy::RunAnyway)));
                let all: Vec<AgentDef> = on_success.into_iter().chain(on_complete).collect();
                let registered = self.store.register(&callback_queue, &all, false, "").await?;
                link_created(&all, &registered);
            }
            if req.close {
                self.store.flows.close_batch(&req.batch).await?;
            }
            metrics::counter!("baton_agents_registered_total", "queue" => req.queue.clone())
                .increment(done.created as u64);
            let status = self.store.flows.read_batch(&req.batch).await?.unwrap_or_default();
            Ok(Response::new(pb::RegisterBatchResponse {
                batch_created: opened == crate::flows::batches::Opened::Created,
                created: done.created,
                status: Some(crate::flows::service::batch_pb(&req.batch, status, &caller)),
            }))
        })
        .await
    }

    async fn close_batch(
        &self,
        request: Request<pb::CloseBatchRequest>,
    ) -> Result<Response<pb::CloseBatchResponse>, Status> {
        observe("CloseBatch", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("batch", &req.batch)?;
            self.store.flows.close_batch(&req.batch).await?;
            let status = self.store.flows.read_batch(&req.batch).await?.unwrap_or_default();
            Ok(Response::new(pb::CloseBatchResponse {
                status: Some(crate::flows::service::batch_pb(&req.batch, status, &caller)),
            }))
        })
        .await
    }

    async fn get_batch(&self, request: Request<pb::GetBatchRequest>) -> Result<Response<pb::GetBatchResponse>, Status> {
        observe("GetBatch", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("batch", &req.batch)?;
            let status = self
                .store
                .flows
                .read_batch(&req.batch)
                .await?
                .ok_or_else(|| Error::NotFound(format!("batch {:?}", req.batch)))?;
            Ok(Response::new(pb::GetBatchResponse {
                status: Some(crate::flows::service::batch_pb(&req.batch, status, &caller)),
            }))
        })
        .await
    }

    async fn list_agents(
        &self,
        request: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        observe("ListAgents", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            let page_size = if req.page_size == 0 { 100 } else { req.page_size };
            if page_size > 1000 {
                return Err(Error::invalid("page_size", "must be at most 1000"));
            }
            let at = match req.page_token.as_str() {
                "" => None,
                token => Some(
                    PagePosition::parse(token)
                        .ok_or_else(|| Error::invalid("page_token", "is not a token a ListAgents page handed out"))?,
                ),
            };
            if !req.name_prefix.is_empty() {
                validate::name("name_prefix", &req.name_prefix)?;
            }
            let page = self.store.list_agents(&req.queue, at.as_ref(), page_size, &req.name_prefix).await?;
            Ok(Response::new(pb::ListAgentsResponse {
                agents: page.agents.into_iter().map(status_pb).collect(),
                next_page_token: page.next.map(|p| p.token()).unwrap_or_default(),
            }))
        })
        .await
    }
}
