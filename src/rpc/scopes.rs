//! What every request names, for the scope check (`auth::authorize`): one impl per request
//! type of every Baton service, so a method cannot be added without saying what it touches.
//! Listings that name nothing (ListDeadLetters without a source, GetHealth, Purge,
//! ListElections) are filtered by the caller's scopes in their handlers instead.

use crate::pb;

use crate::rpc::auth::{NameKind, Scoped};

macro_rules! scoped {
    ($kind:expr, $field:ident: $($request:ty),+ $(,)?) => {
        $(impl Scoped for $request {
            fn names(&self) -> Vec<(NameKind, &str)> {
                vec![($kind, self.$field.as_str())]
            }
        })+
    };
}

scoped!(NameKind::Queue, queue: pb::UnregisterRequest, pb::AcquireRequest,
    pb::CompleteRequest, pb::ReleaseRequest, pb::GetAgentRequest, pb::ListAgentsRequest, pb::CancelRunRequest, pb::AwaitRequest,
    pb::RecordStepRequest, pb::WatchAgentRequest, pb::SignalRequest);
scoped!(NameKind::Pool, pool: pb::OfferRequest, pb::ClaimRequest, pb::ReturnRequest, pb::FailRequest,
    pb::GetPoolRequest, pb::WatchPoolRequest);
scoped!(NameKind::Election, election: pb::CampaignRequest, pb::RenewRequest, pb::ResignRequest,
    pb::GetLeaderRequest, pb::ObserveRequest, pb::GetElectionHistoryRequest);
scoped!(NameKind::Receiver, receiver: pb::ScheduleRequest, pb::SubscribeRequest, pb::AckRequest,
    pb::CancelRequest, pb::ListMessagesRequest);

/// SetLimits touches its queue and the group it joins (which its grants then count in).
impl Scoped for pb::SetLimitsRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        let mut names = vec![(NameKind::Queue, self.queue.as_str())];
        if let Some(g) = self.limits.as_ref().filter(|l| !l.group.is_empty()) {
            names.push((NameKind::Group, g.group.as_str()));
        }
        names
    }
}

scoped!(NameKind::Queue, queue: pb::SessionOpen, pb::SetKeyLimitsRequest, pb::GetKeyLimitsRequest,
    pb::ListKeyLimitsRequest, pb::RecountKeysRequest);

/// Register touches its queue and the queues of the parents its agents name (a child is
/// attached there, and sees their results).
impl Scoped for pb::RegisterRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        let mut names = vec![(NameKind::Queue, self.queue.as_str())];
        for a in &self.agents {
            names.extend(a.after.iter().filter(|r| !r.queue.is_empty()).map(|r| (NameKind::Queue, r.queue.as_str())));
        }
        names
    }
}

/// RegisterBatch touches the batch, the members' queue, the callbacks' queue, and the parents'
/// queues. A batch is scoped as a queue of its name.
impl Scoped for pb::RegisterBatchRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        let mut names = vec![(NameKind::Queue, self.batch.as_str()), (NameKind::Queue, self.queue.as_str())];
        if !self.callback_queue.is_empty() {
            names.push((NameKind::Queue, self.callback_queue.as_str()));
        }
        for a in self.agents.iter().chain(&self.on_success).chain(&self.on_complete) {
            names.extend(a.after.iter().filter(|r| !r.queue.is_empty()).map(|r| (NameKind::Queue, r.queue.as_str())));
        }
        names
    }
}

scoped!(NameKind::Queue, batch: pb::CloseBatchRequest, pb::GetBatchRequest);

impl Scoped for pb::CompleteBatchRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        self.completions.iter().map(|c| (NameKind::Queue, c.queue.as_str())).collect()
    }
}

impl Scoped for pb::ScheduleBatchRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        self.messages.iter().map(|m| (NameKind::Receiver, m.receiver.as_str())).collect()
    }
}

impl Scoped for pb::AckBatchRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        self.acks.iter().map(|a| (NameKind::Receiver, a.receiver.as_str())).collect()
    }
}

impl Scoped for pb::HeartbeatRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        self.leases.iter().map(|l| (NameKind::Queue, l.queue.as_str())).collect()
    }
}

/// A named source (dead-letter calls): its kind and name; nothing for a kind that is not one
/// (validation answers that).
fn source(source: &Option<pb::Source>) -> Vec<(NameKind, &str)> {
    let Some(s) = source else { return Vec::new() };
    let kind = match pb::SourceKind::try_from(s.kind) {
        Ok(pb::SourceKind::Queue) => NameKind::Queue,
        Ok(pb::SourceKind::Pool) => NameKind::Pool,
        Ok(pb::SourceKind::Receiver) => NameKind::Receiver,
        _ => return Vec::new(),
    };
    if s.name.is_empty() {
        return Vec::new();
    }
    vec![(kind, s.name.as_str())]
}

impl Scoped for pb::ListDeadLettersRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        source(&self.source)
    }
}

impl Scoped for pb::RetryDeadLetterRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        source(&self.source)
    }
}

impl Scoped for pb::DeleteDeadLetterRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        source(&self.source)
    }
}

impl Scoped for pb::PauseRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        source(&self.source)
    }
}

impl Scoped for pb::ResumeRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        source(&self.source)
    }
}

impl Scoped for pb::GetHealthRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        Vec::new()
    }
}

impl Scoped for pb::ListElectionsRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        Vec::new()
    }
}

scoped!(NameKind::Group, group: pb::SetGroupLimitsRequest, pb::GetGroupLimitsRequest);

/// ListGroupLimits names none: it lists the groups the caller's scopes admit.
impl Scoped for pb::ListGroupLimitsRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        Vec::new()
    }
}

impl Scoped for pb::PurgeRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        Vec::new()
    }
}
