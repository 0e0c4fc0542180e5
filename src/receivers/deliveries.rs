//! What ScheduleService's Subscribe and its Receive stream share: a subscription's delivery
//! settings, checked, and a delivery round as sent to a consumer. Both import this module, so
//! neither imports the other for them.

use tokio_util::sync::CancellationToken;

use crate::rpc::validate;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pb;
use crate::receivers::store::{Delivery, DeliveryLimits};
use crate::rpc::timestamp;

/// Checks a subscription (`field` prefixes its fields' names in errors: "" for Subscribe,
/// "open." for Receive); the delivery settings of its consumer.
pub(crate) fn delivery_limits(
    config: &Config,
    shutdown: &CancellationToken,
    field: &str,
    req: &pb::SubscribeRequest,
) -> Result<DeliveryLimits> {
    validate::name(&format!("{field}receiver"), &req.receiver)?;
    validate::name(&format!("{field}consumer_id"), &req.consumer_id)?;
    let max_in_flight = req.max_in_flight.max(1);
    if max_in_flight > config.limits.max_batch {
        return Err(Error::invalid(
            format!("{field}max_in_flight"),
            format!("must be at most {}", config.limits.max_batch),
        ));
    }
    if shutdown.is_cancelled() {
        return Err(Error::Unavailable("server is shutting down".into()));
    }
    let s = &config.schedule;
    Ok(DeliveryLimits {
        max_in_flight,
        ack_timeout_ms: s.ack_timeout_ms,
        max_deliveries: s.max_deliveries,
        batch: s.batch.min(max_in_flight),
    })
}

/// One delivery round's messages, as sent to a consumer; counted in the receiver's metrics
/// (deliveries, redeliveries, dead letters, and the lateness of first deliveries).
pub(crate) fn delivered(
    receiver: &str,
    now_ms: i64,
    redelivered: u64,
    dead_lettered: u64,
    deliveries: Vec<Delivery>,
) -> Vec<pb::SubscribeResponse> {
    let labels = [("receiver", receiver.to_string())];
    metrics::counter!("baton_schedule_redelivered_total", &labels).increment(redelivered);
    metrics::counter!("baton_schedule_dead_lettered_total", &labels).increment(dead_lettered);
    metrics::counter!("baton_schedule_delivered_total", &labels).increment(deliveries.len() as u64);
    let lateness = metrics::histogram!("baton_schedule_lateness_seconds", &labels);
    deliveries
        .into_iter()
        .map(|d| {
            if d.count == 1 {
                lateness.record((now_ms - d.deliver_at_ms).max(0) as f64 / 1000.0);
            }
            pb::SubscribeResponse {
                id: d.id,
                payload: d.payload,
                deliver_at: Some(timestamp(d.deliver_at_ms)),
                delivery_count: d.count,
                token: d.token,
                traceparent: d.traceparent,
            }
        })
        .collect()
}
