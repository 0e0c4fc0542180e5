//! The auto-purge: one pass over every queue, pool and receiver finds stale entries — leases
//! far past their deadline, claims held too long, resources idle too long, metadata with
//! nothing behind it, expired dead letters — and dead-letters, requeues or removes them, each
//! with its reason. A dry run finds the same and changes nothing. The sweeper runs a pass every
//! `purge.interval_ms` on the elected replica; AdminService.Purge runs one on demand.

use crate::admin::store::{PurgeLimits, Purged};
use crate::store::SourceKind;

use crate::config::Config;

use crate::error::Result;

use crate::admin::store::Admin;

/// Entries per script call.
const PAGE: u32 = 200;

/// One finding of a pass.
#[derive(Clone, Debug)]
pub(crate) struct Finding {
    pub kind: SourceKind,
    pub source: String,
    pub item: Purged,
}

/// Runs one pass over every queue, pool and receiver that `within` admits (a caller's scopes).
pub(crate) async fn run(
    store: &Admin,
    config: &Config,
    dry_run: bool,
    within: impl Fn(SourceKind, &str) -> bool,
) -> Result<Vec<Finding>> {
    let p = &config.purge;
    let limits = PurgeLimits {
        dry_run,
        max_working_age_ms: p.max_working_age_ms,
        max_idle_age_ms: p.max_idle_age_ms,
        max_claim_age_ms: p.max_claim_age_ms,
    };
    let mut findings = Vec::new();
    for kind in [SourceKind::Queue, SourceKind::Pool, SourceKind::Receiver] {
        let mut names = match kind {
            SourceKind::Queue => store.queues.queues().await?,
            SourceKind::Pool => store.pools.pools().await?,
            SourceKind::Receiver => store.receivers.receivers().await?,
        };
        names.retain(|name| within(kind, name));
        names.sort();
        for name in names {
            let mut cursor = "0".to_string();
            loop {
                let (next, items) = match kind {
                    SourceKind::Queue => store.purge_queue(&name, limits, &cursor, PAGE).await?,
                    SourceKind::Pool => store.purge_pool(&name, limits, &cursor, PAGE).await?,
                    SourceKind::Receiver => store.purge_receiver(&name, dry_run, &cursor, PAGE).await?,
                };
                findings.extend(items.into_iter().map(|item| Finding { kind, source: name.clone(), item }));
                cursor = next;
                if cursor == "0" {
                    break;
                }
            }
        }
    }
    for f in &findings {
        tracing::info!(
            kind = f.kind.as_str(),
            source = f.source,
            id = f.item.id,
            reason = f.item.reason,
            action = f.item.action,
            dry_run,
            "purge"
        );
        if !dry_run {
            metrics::counter!("baton_purged_total", "kind" => f.kind.as_str(), "action" => f.item.action.clone())
                .increment(1);
        }
    }
    Ok(findings)
}
