//! AdminService: GetHealth, ListDeadLetters, RetryDeadLetter, DeleteDeadLetter, Purge, and flow
//! control: SetLimits, SetKeyLimits, GetKeyLimits, ListKeyLimits, RecountKeys, Pause, Resume.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::rpc::validate;

use crate::admin::store::Admin;
use crate::admin::store::DeadLetterEntry;
use crate::admin::{health, purge};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::pb;
use crate::pb::admin_service_server::AdminService;
use crate::queues::limits::{
    GroupLimits, GroupStatus, KeyLimits, KeyLimitsEntry, QueueLimits, RateLimit, MAX_KEY_WEIGHT,
};
use crate::rpc::auth;
use crate::rpc::{duration, observe, timestamp};
use crate::store::SourceKind;

pub(crate) struct AdminServiceImpl {
    store: Admin,
    config: Arc<Config>,
}

impl AdminServiceImpl {
    pub(crate) fn new(store: Admin, config: Arc<Config>) -> Self {
        Self { store, config }
    }

    /// Every source of a kind, by name.
    async fn sources(&self, kind: SourceKind) -> Result<Vec<String>> {
        let mut names = match kind {
            SourceKind::Queue => self.store.queues.queues().await?,
            SourceKind::Pool => self.store.pools.pools().await?,
            SourceKind::Receiver => self.store.receivers.receivers().await?,
        };
        names.sort();
        Ok(names)
    }
}

fn kind(field: &str, value: i32) -> Result<SourceKind> {
    match pb::SourceKind::try_from(value) {
        Ok(pb::SourceKind::Queue) => Ok(SourceKind::Queue),
        Ok(pb::SourceKind::Pool) => Ok(SourceKind::Pool),
        Ok(pb::SourceKind::Receiver) => Ok(SourceKind::Receiver),
        Ok(pb::SourceKind::Unspecified) => Err(Error::invalid(field, "is required (QUEUE, POOL or RECEIVER)")),
        Err(_) => Err(Error::invalid(field, format!("unknown value {value}"))),
    }
}

fn kind_pb(kind: SourceKind) -> i32 {
    match kind {
        SourceKind::Queue => pb::SourceKind::Queue as i32,
        SourceKind::Pool => pb::SourceKind::Pool as i32,
        SourceKind::Receiver => pb::SourceKind::Receiver as i32,
    }
}

fn status_pb(s: health::Status) -> i32 {
    (match s {
        health::Status::Healthy => pb::HealthStatus::Healthy,
        health::Status::Degraded => pb::HealthStatus::Degraded,
        health::Status::Unhealthy => pb::HealthStatus::Unhealthy,
    }) as i32
}

/// Validates a source naming one queue or pool.
fn source(field: &str, s: Option<&pb::Source>) -> Result<(SourceKind, String)> {
    let s = s.ok_or_else(|| Error::invalid(field, "is required"))?;
    let kind = kind(&format!("{field}.kind"), s.kind)?;
    validate::name(&format!("{field}.name"), &s.name)?;
    Ok((kind, s.name.clone()))
}

/// Most a limit can say (concurrency, burst, grants per second).
const MAX_LIMIT: u32 = 1_000_000;

/// Validates a queue's limits; fills in the default burst. `max_duration_ms` bounds the
/// priority aging (`limits.max_duration_ms`).
fn limits(l: Option<&pb::QueueLimits>, max_duration_ms: u64) -> Result<QueueLimits> {
    let Some(l) = l else { return Ok(QueueLimits::default()) };
    let concurrency = |field: &str, value: u32| -> Result<Option<u32>> {
        if value > MAX_LIMIT {
            return Err(Error::invalid(field, format!("must be at most {MAX_LIMIT}, got {value}")));
        }
        Ok((value > 0).then_some(value))
    };
    Ok(QueueLimits {
        concurrency: concurrency("limits.concurrency", l.concurrency)?,
        rate: rate_limit("limits.rate", l.rate.as_ref())?,
        key_concurrency: concurrency("limits.key_concurrency", l.key_concurrency)?,
        key_rate: rate_limit("limits.key_rate", l.key_rate.as_ref())?,
        priority_aging_ms: match validate::duration_ms(
            "limits.priority_aging",
            l.priority_aging.as_ref(),
            max_duration_ms,
        )? {
            Some(0) => {
                return Err(Error::invalid("limits.priority_aging", "must be at least 1 ms (omit it for no aging)"))
            }
            ms => ms,
        },
        group: if l.group.is_empty() {
            None
        } else {
            validate::name("limits.group", &l.group)?;
            Some(l.group.clone())
        },
    })
}

/// Validates a group's limits (`limits.*`); fills in the default burst.
fn group_limits(l: Option<&pb::GroupLimits>) -> Result<GroupLimits> {
    let Some(l) = l else { return Ok(GroupLimits::default()) };
    let concurrency = |field: &str, value: u32| -> Result<Option<u32>> {
        if value > MAX_LIMIT {
            return Err(Error::invalid(field, format!("must be at most {MAX_LIMIT}, got {value}")));
        }
        Ok((value > 0).then_some(value))
    };
    Ok(GroupLimits {
        concurrency: concurrency("limits.concurrency", l.concurrency)?,
        rate: rate_limit("limits.rate", l.rate.as_ref())?,
        key_concurrency: concurrency("limits.key_concurrency", l.key_concurrency)?,
    })
}

fn group_pb(g: GroupStatus) -> pb::GroupLimitsEntry {
    let l = g.limits;
    pb::GroupLimitsEntry {
        group: g.name,
        limits: Some(pb::GroupLimits {
            concurrency: l.concurrency.unwrap_or(0),
            rate: l.rate.map(|r| pb::RateLimit { per_second: r.per_second, burst: r.burst }),
            key_concurrency: l.key_concurrency.unwrap_or(0),
        }),
        held: g.held,
        rate_tokens: g.tokens.unwrap_or(0.0),
    }
}

/// Validates a token bucket named `field`; fills in the default burst.
fn rate_limit(field: &str, r: Option<&pb::RateLimit>) -> Result<Option<RateLimit>> {
    let Some(r) = r else { return Ok(None) };
    let per_second = r.per_second;
    if !per_second.is_finite() || per_second <= 0.0 || per_second > MAX_LIMIT as f64 {
        return Err(Error::invalid(
            format!("{field}.per_second"),
            format!("must be above 0 and at most {MAX_LIMIT}, got {per_second} (omit it for no rate limit)"),
        ));
    }
    if r.burst > MAX_LIMIT {
        return Err(Error::invalid(format!("{field}.burst"), format!("must be at most {MAX_LIMIT}, got {}", r.burst)));
    }
    let burst = if r.burst == 0 { (per_second.ceil() as u32).max(1) } else { r.burst };
    Ok(Some(RateLimit { per_second, burst }))
}

fn limits_pb(l: &QueueLimits) -> Option<pb::QueueLimits> {
    (*l != QueueLimits::default()).then(|| pb::QueueLimits {
        concurrency: l.concurrency.unwrap_or(0),
        rate: l.rate.map(|r| pb::RateLimit { per_second: r.per_second, burst: r.burst }),
        key_concurrency: l.key_concurrency.unwrap_or(0),
        key_rate: l.key_rate.map(|r| pb::RateLimit { per_second: r.per_second, burst: r.burst }),
        priority_aging: l.priority_aging_ms.and_then(duration),
        group: l.group.clone().unwrap_or_default(),
    })
}

/// Validates one key's weight and overrides (`limits.*`); fills in the default burst.
fn key_limits(l: Option<&pb::KeyLimits>) -> Result<KeyLimits> {
    let Some(l) = l else { return Ok(KeyLimits::default()) };
    if l.weight > MAX_KEY_WEIGHT {
        return Err(Error::invalid(
            "limits.weight",
            format!("must be at most {MAX_KEY_WEIGHT}, got {} (0 means 1)", l.weight),
        ));
    }
    if let Some(c) = l.concurrency {
        if c > MAX_LIMIT {
            return Err(Error::invalid("limits.concurrency", format!("must be at most {MAX_LIMIT}, got {c}")));
        }
    }
    Ok(KeyLimits {
        weight: l.weight.max(1),
        concurrency: l.concurrency,
        rate: rate_limit("limits.rate", l.rate.as_ref())?,
    })
}

fn key_limits_pb(e: KeyLimitsEntry) -> pb::KeyLimitsEntry {
    let l = e.limits;
    pb::KeyLimitsEntry {
        key: e.key,
        limits: Some(pb::KeyLimits {
            weight: l.weight,
            concurrency: l.concurrency,
            rate: l.rate.map(|r| pb::RateLimit { per_second: r.per_second, burst: r.burst }),
        }),
        held: e.held,
    }
}

/// Validates the key of SetKeyLimits and GetKeyLimits: a name, as Agent.key takes it.
fn key(value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid("key", "is required (agents without a key take no per-key limits)"));
    }
    validate::name("key", value)
}

/// The validated source of Pause and Resume, once it is known: operator calls refuse a name
/// that never existed (NOT_FOUND) rather than create it (a typo would make a phantom queue that
/// says "paused"), unless the caller declares it with `create`.
async fn known_source(store: &Admin, s: Option<&pb::Source>, create: bool) -> Result<(SourceKind, String)> {
    let (kind, name) = source("source", s)?;
    if !create {
        must_exist(store, kind, &name).await?;
    }
    Ok((kind, name))
}

async fn must_exist(store: &Admin, kind: SourceKind, name: &str) -> Result<()> {
    if !store.known(kind, name).await? {
        return Err(Error::NotFound(format!(
            "no {} {name:?}: nothing was ever registered, offered or scheduled there",
            kind.as_str()
        )));
    }
    Ok(())
}

fn dead_letter_pb(kind: SourceKind, name: &str, e: DeadLetterEntry) -> pb::DeadLetter {
    let c = &e.context;
    let text = |keys: &[&str]| keys.iter().find_map(|k| c.get(*k).and_then(|v| v.as_str())).unwrap_or("").to_string();
    let attributes = c
        .get("attributes")
        .and_then(|a| a.as_object())
        .map(|a| a.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default();
    let class = text(&["outcome", "error_class"]);
    let holder = text(&["worker", "claimer", "consumer"]);
    pb::DeadLetter {
        source: Some(pb::Source { kind: kind_pb(kind), name: name.to_string() }),
        id: e.id,
        error_class: if class.is_empty() { "FAILED".into() } else { class },
        message: text(&["message", "error"]),
        failed_at: Some(timestamp(e.failed_at_ms)),
        attempts: c.get("attempts").and_then(|a| a.as_u64()).unwrap_or(0) as u32,
        holder,
        payload: e.payload,
        attributes,
    }
}

/// "kind|source|offset": where a listing continues.
fn page_token(kind: SourceKind, source: &str, offset: u64) -> String {
    format!("{}|{source}|{offset}", kind.as_str())
}

/// Most entries a dead-letter queue can hold past which a page token's offset cannot point.
const MAX_PAGE_OFFSET: u64 = 1 << 32;

/// A ListDeadLetters page token: (kind, source, offset), or None for the first page. Anything
/// this listing could not have returned (another kind, a bad name, an offset out of range) is
/// INVALID_ARGUMENT naming `page_token`.
fn parse_page_token(token: &str, kinds: &[SourceKind]) -> Result<Option<(SourceKind, String, u64)>> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || Error::invalid("page_token", "is not a token this listing returned");
    let mut parts = token.splitn(3, '|');
    let (k, s, o) = (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?);
    let kind = *kinds.iter().find(|x| x.as_str() == k).ok_or_else(bad)?;
    // A sharded source's shard: `<name>#<index>`.
    let (queue, shard) = s.split_once('#').unwrap_or((s, "0"));
    validate::name("page_token", queue).map_err(|_| bad())?;
    if shard.is_empty() || shard.len() > 2 || !shard.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let offset: u64 = o.parse().map_err(|_| bad())?;
    if offset > MAX_PAGE_OFFSET || o.starts_with('+') {
        return Err(bad());
    }
    Ok(Some((kind, s.to_string(), offset)))
}

#[tonic::async_trait]
impl AdminService for AdminServiceImpl {
    async fn get_health(
        &self,
        request: Request<pb::GetHealthRequest>,
    ) -> Result<Response<pb::GetHealthResponse>, Status> {
        observe("GetHealth", async {
            let caller = auth::authorize(&request)?;
            let mut h = health::check(&self.store, &self.config).await?;
            // A scoped caller sees its own sources, and a status made of them only.
            if caller.is_some() {
                h.sources.retain(|s| auth::sees(&caller, s.kind.into(), &s.name));
                h.status = h.sources.iter().map(|s| s.status).max().unwrap_or(health::Status::Healthy);
            }
            let sources = h
                .sources
                .into_iter()
                .map(|s| pb::SourceHealth {
                    source: Some(pb::Source { kind: kind_pb(s.kind), name: s.name }),
                    size: s.size,
                    oldest_age: duration(s.oldest_age_ms.max(0) as u64),
                    average_age: duration(s.average_age_ms.max(0) as u64),
                    stuck: s.stuck,
                    dead_lettered: s.dead_lettered,
                    processing_rate: s.processing_rate,
                    status: status_pb(s.status),
                    reasons: s.reasons,
                    in_use: s.in_use,
                    idle: s.idle,
                    paused: s.paused,
                    limits: limits_pb(&s.limits),
                    rate_tokens: s.rate_tokens,
                    expired: s.expired,
                })
                .collect();
            Ok(Response::new(pb::GetHealthResponse {
                status: status_pb(h.status),
                sources,
                checked_at: Some(timestamp(h.checked_at_ms)),
            }))
        })
        .await
    }

    async fn list_dead_letters(
        &self,
        request: Request<pb::ListDeadLettersRequest>,
    ) -> Result<Response<pb::ListDeadLettersResponse>, Status> {
        observe("ListDeadLetters", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            // No source (or an empty one): every dead letter of every kind, queues first.
            let all = [SourceKind::Queue, SourceKind::Pool, SourceKind::Receiver];
            let (kinds, named) = match req.source.as_ref() {
                None => (all.to_vec(), None),
                Some(f) if f.kind == 0 && f.name.is_empty() => (all.to_vec(), None),
                Some(f) => {
                    let kind = kind("source.kind", f.kind)?;
                    if !f.name.is_empty() {
                        validate::name("source.name", &f.name)?;
                        must_exist(&self.store, kind, &f.name).await?;
                    }
                    (vec![kind], (!f.name.is_empty()).then(|| f.name.clone()))
                }
            };
            let page_size = if req.page_size == 0 { 100 } else { req.page_size };
            if page_size > 1000 {
                return Err(Error::invalid("page_size", "must be at most 1000"));
            }
            let start = parse_page_token(&req.page_token, &kinds)?;
            // Every (kind, source) in listing order, from where the token points.
            let mut sources = Vec::new();
            for &kind in &kinds {
                let names = match &named {
                    // A sharded source lists its shards in turn.
                    Some(name) => self.store.shard_names(kind, name),
                    // Every source the caller may see.
                    None => {
                        self.sources(kind).await?.into_iter().filter(|n| auth::sees(&caller, kind.into(), n)).collect()
                    }
                };
                sources.extend(names.into_iter().map(|name| (kind, name)));
            }
            if let Some((kind, name, _)) = &start {
                let rank = |k: SourceKind| kinds.iter().position(|x| *x == k);
                sources.retain(|(k, n)| (rank(*k), n.as_str()) >= (rank(*kind), name.as_str()));
            }
            let mut out = Vec::new();
            let mut next = String::new();
            for (i, (kind, source)) in sources.iter().enumerate() {
                let from = match &start {
                    Some((k, n, offset)) if k == kind && n == source => *offset,
                    _ => 0,
                };
                let want = page_size - out.len() as u32;
                let (total, entries) = self.store.dead_letters(*kind, source, from, want).await?;
                let got = entries.len() as u64;
                let shown = crate::store::shards::logical(source);
                out.extend(entries.into_iter().map(|mut e| {
                    if *kind == SourceKind::Receiver {
                        e.id = crate::receivers::shards::public_id(source, &e.id);
                    }
                    dead_letter_pb(*kind, shown, e)
                }));
                if out.len() as u32 == page_size {
                    next = if from + got < total {
                        page_token(*kind, source, from + got)
                    } else {
                        sources.get(i + 1).map(|(k, s)| page_token(*k, s, 0)).unwrap_or_default()
                    };
                    break;
                }
            }
            Ok(Response::new(pb::ListDeadLettersResponse { dead_letters: out, next_page_token: next }))
        })
        .await
    }

    async fn retry_dead_letter(
        &self,
        request: Request<pb::RetryDeadLetterRequest>,
    ) -> Result<Response<pb::RetryDeadLetterResponse>, Status> {
        observe("RetryDeadLetter", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            let (kind, name) = source("source", req.source.as_ref())?;
            validate::name("id", &req.id)?;
            if !self.store.retry_dead_letter(kind, &name, &req.id).await? {
                return Err(Error::NotFound(format!("dead letter {:?} in {} {name:?}", req.id, kind.as_str())));
            }
            tracing::info!(target: "baton::audit", identity = auth::who(&caller), kind = kind.as_str(), source = name, id = req.id, "dead letter retried");
            Ok(Response::new(pb::RetryDeadLetterResponse {}))
        })
        .await
    }

    async fn delete_dead_letter(
        &self,
        request: Request<pb::DeleteDeadLetterRequest>,
    ) -> Result<Response<pb::DeleteDeadLetterResponse>, Status> {
        observe("DeleteDeadLetter", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            let (kind, name) = source("source", req.source.as_ref())?;
            validate::name("id", &req.id)?;
            if !self.store.delete_dead_letter(kind, &name, &req.id).await? {
                return Err(Error::NotFound(format!("dead letter {:?} in {} {name:?}", req.id, kind.as_str())));
            }
            tracing::info!(target: "baton::audit", identity = auth::who(&caller), kind = kind.as_str(), source = name, id = req.id, "dead letter deleted");
            Ok(Response::new(pb::DeleteDeadLetterResponse {}))
        })
        .await
    }

    async fn purge(&self, request: Request<pb::PurgeRequest>) -> Result<Response<pb::PurgeResponse>, Status> {
        observe("Purge", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            let within = |kind: SourceKind, name: &str| auth::sees(&caller, kind.into(), name);
            let found = purge::run(&self.store, &self.config, req.dry_run, within).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                dry_run = req.dry_run,
                findings = found.len(),
                "purge"
            );
            let items = found
                .into_iter()
                .map(|f| pb::PurgedItem {
                    source: Some(pb::Source { kind: kind_pb(f.kind), name: f.source }),
                    id: f.item.id,
                    reason: f.item.reason,
                    action: f.item.action,
                })
                .collect();
            Ok(Response::new(pb::PurgeResponse { items, dry_run: req.dry_run }))
        })
        .await
    }

    async fn set_limits(
        &self,
        request: Request<pb::SetLimitsRequest>,
    ) -> Result<Response<pb::SetLimitsResponse>, Status> {
        observe("SetLimits", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            let limits = limits(req.limits.as_ref(), self.config.limits.max_duration_ms)?;
            // `create` declares a queue ahead of its first agent: set_limits registers it.
            if !req.create {
                must_exist(&self.store, SourceKind::Queue, &req.queue).await?;
            }
            self.store.queues.set_limits(&req.queue, &limits).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                queue = req.queue,
                limits = ?limits,
                "set limits"
            );
            Ok(Response::new(pb::SetLimitsResponse { limits: limits_pb(&limits) }))
        })
        .await
    }

    async fn set_key_limits(
        &self,
        request: Request<pb::SetKeyLimitsRequest>,
    ) -> Result<Response<pb::SetKeyLimitsResponse>, Status> {
        observe("SetKeyLimits", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            key(&req.key)?;
            let limits = key_limits(req.limits.as_ref())?;
            must_exist(&self.store, SourceKind::Queue, &req.queue).await?;
            let replaced = self.store.queues.set_key_limits(&req.queue, &req.key, &limits).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                queue = req.queue,
                key = req.key,
                limits = ?limits,
                "set key limits"
            );
            let held = self.store.queues.key_limits(&req.queue, &[&req.key]).await?.pop().map(|e| e.held).unwrap_or(0);
            let entry = KeyLimitsEntry { key: req.key, limits, held };
            Ok(Response::new(pb::SetKeyLimitsResponse { key_limits: Some(key_limits_pb(entry)), replaced }))
        })
        .await
    }

    async fn get_key_limits(
        &self,
        request: Request<pb::GetKeyLimitsRequest>,
    ) -> Result<Response<pb::GetKeyLimitsResponse>, Status> {
        observe("GetKeyLimits", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            key(&req.key)?;
            must_exist(&self.store, SourceKind::Queue, &req.queue).await?;
            let entry = self.store.queues.key_limits(&req.queue, &[&req.key]).await?.pop().unwrap_or(KeyLimitsEntry {
                key: req.key,
                limits: KeyLimits::default(),
                held: 0,
            });
            Ok(Response::new(pb::GetKeyLimitsResponse { key_limits: Some(key_limits_pb(entry)) }))
        })
        .await
    }

    async fn list_key_limits(
        &self,
        request: Request<pb::ListKeyLimitsRequest>,
    ) -> Result<Response<pb::ListKeyLimitsResponse>, Status> {
        observe("ListKeyLimits", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            let page_size = if req.page_size == 0 { 100 } else { req.page_size };
            if page_size > 1000 {
                return Err(Error::invalid("page_size", format!("must be at most 1000, got {page_size}")));
            }
            // The token is the last key of the previous page.
            let after = (!req.page_token.is_empty()).then_some(req.page_token.as_str());
            if let Some(t) = after {
                validate::name("page_token", t)
                    .map_err(|_| Error::invalid("page_token", "is not a token this listing returned"))?;
            }
            must_exist(&self.store, SourceKind::Queue, &req.queue).await?;
            let keys = self.store.queues.list_key_limits(&req.queue, after, page_size).await?;
            let next = if keys.len() as u32 == page_size { keys.last().map(|e| e.key.clone()) } else { None };
            Ok(Response::new(pb::ListKeyLimitsResponse {
                keys: keys.into_iter().map(key_limits_pb).collect(),
                next_page_token: next.unwrap_or_default(),
            }))
        })
        .await
    }

    async fn set_group_limits(
        &self,
        request: Request<pb::SetGroupLimitsRequest>,
    ) -> Result<Response<pb::SetGroupLimitsResponse>, Status> {
        observe("SetGroupLimits", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("group", &req.group)?;
            let limits = group_limits(req.limits.as_ref())?;
            let replaced = self.store.queues.set_group_limits(&req.group, &limits).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                group = req.group,
                limits = ?limits,
                "set group limits"
            );
            let status = self.store.queues.group_limits(&req.group).await?.unwrap_or(GroupStatus {
                name: req.group,
                limits,
                held: 0,
                tokens: None,
            });
            Ok(Response::new(pb::SetGroupLimitsResponse { group: Some(group_pb(status)), replaced }))
        })
        .await
    }

    async fn get_group_limits(
        &self,
        request: Request<pb::GetGroupLimitsRequest>,
    ) -> Result<Response<pb::GetGroupLimitsResponse>, Status> {
        observe("GetGroupLimits", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("group", &req.group)?;
            let status = self
                .store
                .queues
                .group_limits(&req.group)
                .await?
                .ok_or_else(|| Error::NotFound(format!("group {}", req.group)))?;
            Ok(Response::new(pb::GetGroupLimitsResponse { group: Some(group_pb(status)) }))
        })
        .await
    }

    async fn list_group_limits(
        &self,
        request: Request<pb::ListGroupLimitsRequest>,
    ) -> Result<Response<pb::ListGroupLimitsResponse>, Status> {
        observe("ListGroupLimits", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            let page_size = if req.page_size == 0 { 100 } else { req.page_size };
            if page_size > 1000 {
                return Err(Error::invalid("page_size", format!("must be at most 1000, got {page_size}")));
            }
            // The token is the last group of the previous page.
            let after = (!req.page_token.is_empty()).then_some(req.page_token.as_str());
            if let Some(t) = after {
                validate::name("page_token", t)
                    .map_err(|_| Error::invalid("page_token", "is not a token this listing returned"))?;
            }
            let groups = self.store.queues.list_groups(after, page_size).await?;
            let next = if groups.len() as u32 == page_size { groups.last().map(|g| g.name.clone()) } else { None };
            Ok(Response::new(pb::ListGroupLimitsResponse {
                groups: groups
                    .into_iter()
                    .filter(|g| auth::sees(&caller, auth::NameKind::Group, &g.name))
                    .map(group_pb)
                    .collect(),
                next_page_token: next.unwrap_or_default(),
            }))
        })
        .await
    }

    async fn recount_keys(
        &self,
        request: Request<pb::RecountKeysRequest>,
    ) -> Result<Response<pb::RecountKeysResponse>, Status> {
        observe("RecountKeys", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("queue", &req.queue)?;
            must_exist(&self.store, SourceKind::Queue, &req.queue).await?;
            let r = self.store.queues.recount_keys(&req.queue, crate::queues::limits::RECOUNT_STEP).await?;
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                queue = req.queue,
                leases = r.leases,
                corrected = r.corrected,
                steps = r.steps,
                "recount keys"
            );
            Ok(Response::new(pb::RecountKeysResponse { leases: r.leases, corrected: r.corrected }))
        })
        .await
    }

    async fn pause(&self, request: Request<pb::PauseRequest>) -> Result<Response<pb::PauseResponse>, Status> {
        observe("Pause", async {
            let caller = auth::authorize(&request)?;
            let req = request.get_ref();
            let (kind, name) = known_source(&self.store, req.source.as_ref(), req.create).await?;
            let changed = self.store.queues.set_paused(kind, &name, true).await?;
            tracing::info!(target: "baton::audit", identity = auth::who(&caller), kind = kind.as_str(), name, changed, "pause");
            Ok(Response::new(pb::PauseResponse { changed }))
        })
        .await
    }

    async fn resume(&self, request: Request<pb::ResumeRequest>) -> Result<Response<pb::ResumeResponse>, Status> {
        observe("Resume", async {
            let caller = auth::authorize(&request)?;
            let req = request.get_ref();
            let (kind, name) = known_source(&self.store, req.source.as_ref(), req.create).await?;
            let changed = self.store.queues.set_paused(kind, &name, false).await?;
            tracing::info!(target: "baton::audit", identity = auth::who(&caller), kind = kind.as_str(), name, changed, "resume");
            Ok(Response::new(pb::ResumeResponse { changed }))
        })
        .await
    }
}
