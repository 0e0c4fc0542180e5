import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class IdempotencyMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IDEMPOTENCY_MODE_UNSPECIFIED: _ClassVar[IdempotencyMode]
    IDEMPOTENCY_MODE_KEEP_FIRST: _ClassVar[IdempotencyMode]
    IDEMPOTENCY_MODE_REPLACE: _ClassVar[IdempotencyMode]
    IDEMPOTENCY_MODE_DEBOUNCE: _ClassVar[IdempotencyMode]

class ParentFailure(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARENT_FAILURE_UNSPECIFIED: _ClassVar[ParentFailure]
    PARENT_FAILURE_WAIT: _ClassVar[ParentFailure]
    PARENT_FAILURE_CANCEL: _ClassVar[ParentFailure]
    PARENT_FAILURE_RUN_ANYWAY: _ClassVar[ParentFailure]

class Finish(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINISH_UNSPECIFIED: _ClassVar[Finish]
    FINISH_SUCCEEDED: _ClassVar[Finish]
    FINISH_DEAD_LETTERED: _ClassVar[Finish]
    FINISH_CANCELLED: _ClassVar[Finish]
    FINISH_UNREGISTERED: _ClassVar[Finish]
    FINISH_EXPIRED: _ClassVar[Finish]

class CatchUp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CATCH_UP_UNSPECIFIED: _ClassVar[CatchUp]
    CATCH_UP_RUN_ONCE: _ClassVar[CatchUp]
    CATCH_UP_SKIP: _ClassVar[CatchUp]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_SUCCESS: _ClassVar[Outcome]
    OUTCOME_PERMANENT_FORBIDDEN: _ClassVar[Outcome]
    OUTCOME_THROTTLED: _ClassVar[Outcome]
    OUTCOME_TRANSIENT: _ClassVar[Outcome]
    OUTCOME_SERVER_ERROR: _ClassVar[Outcome]
    OUTCOME_UNKNOWN: _ClassVar[Outcome]

class AgentState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_STATE_UNSPECIFIED: _ClassVar[AgentState]
    AGENT_STATE_WAITING: _ClassVar[AgentState]
    AGENT_STATE_WORKING: _ClassVar[AgentState]
    AGENT_STATE_DEAD_LETTERED: _ClassVar[AgentState]
    AGENT_STATE_BLOCKED: _ClassVar[AgentState]
    AGENT_STATE_WAITING_FOR_EVENT: _ClassVar[AgentState]

class WatchUpdate(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WATCH_UPDATE_UNSPECIFIED: _ClassVar[WatchUpdate]
    WATCH_UPDATE_SNAPSHOT: _ClassVar[WatchUpdate]
    WATCH_UPDATE_GRANTED: _ClassVar[WatchUpdate]
    WATCH_UPDATE_PROGRESS: _ClassVar[WatchUpdate]
    WATCH_UPDATE_STEP: _ClassVar[WatchUpdate]
    WATCH_UPDATE_FINISHED: _ClassVar[WatchUpdate]
IDEMPOTENCY_MODE_UNSPECIFIED: IdempotencyMode
IDEMPOTENCY_MODE_KEEP_FIRST: IdempotencyMode
IDEMPOTENCY_MODE_REPLACE: IdempotencyMode
IDEMPOTENCY_MODE_DEBOUNCE: IdempotencyMode
PARENT_FAILURE_UNSPECIFIED: ParentFailure
PARENT_FAILURE_WAIT: ParentFailure
PARENT_FAILURE_CANCEL: ParentFailure
PARENT_FAILURE_RUN_ANYWAY: ParentFailure
FINISH_UNSPECIFIED: Finish
FINISH_SUCCEEDED: Finish
FINISH_DEAD_LETTERED: Finish
FINISH_CANCELLED: Finish
FINISH_UNREGISTERED: Finish
FINISH_EXPIRED: Finish
CATCH_UP_UNSPECIFIED: CatchUp
CATCH_UP_RUN_ONCE: CatchUp
CATCH_UP_SKIP: CatchUp
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_SUCCESS: Outcome
OUTCOME_PERMANENT_FORBIDDEN: Outcome
OUTCOME_THROTTLED: Outcome
OUTCOME_TRANSIENT: Outcome
OUTCOME_SERVER_ERROR: Outcome
OUTCOME_UNKNOWN: Outcome
AGENT_STATE_UNSPECIFIED: AgentState
AGENT_STATE_WAITING: AgentState
AGENT_STATE_WORKING: AgentState
AGENT_STATE_DEAD_LETTERED: AgentState
AGENT_STATE_BLOCKED: AgentState
AGENT_STATE_WAITING_FOR_EVENT: AgentState
WATCH_UPDATE_UNSPECIFIED: WatchUpdate
WATCH_UPDATE_SNAPSHOT: WatchUpdate
WATCH_UPDATE_GRANTED: WatchUpdate
WATCH_UPDATE_PROGRESS: WatchUpdate
WATCH_UPDATE_STEP: WatchUpdate
WATCH_UPDATE_FINISHED: WatchUpdate

class Agent(_message.Message):
    __slots__ = ("name", "interval", "timeout", "error_interval", "payload", "labels", "max_attempts", "cron", "time_zone", "catch_up", "key", "priority", "traceparent", "after", "on_parent_failure", "idempotency_key", "idempotency_window", "keep_result", "idempotency_mode", "debounce", "expire_at", "ttl", "wait_for")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ON_PARENT_FAILURE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_WINDOW_FIELD_NUMBER: _ClassVar[int]
    KEEP_RESULT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_MODE_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_AT_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    interval: _duration_pb2.Duration
    timeout: _duration_pb2.Duration
    error_interval: _duration_pb2.Duration
    payload: bytes
    labels: _containers.ScalarMap[str, str]
    max_attempts: int
    cron: str
    time_zone: str
    catch_up: CatchUp
    key: str
    priority: int
    traceparent: str
    after: _containers.RepeatedCompositeFieldContainer[AgentRef]
    on_parent_failure: ParentFailure
    idempotency_key: str
    idempotency_window: _duration_pb2.Duration
    keep_result: bool
    idempotency_mode: IdempotencyMode
    debounce: _duration_pb2.Duration
    expire_at: _timestamp_pb2.Timestamp
    ttl: _duration_pb2.Duration
    wait_for: WaitFor
    def __init__(self, name: _Optional[str] = ..., interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., error_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., payload: _Optional[bytes] = ..., labels: _Optional[_Mapping[str, str]] = ..., max_attempts: _Optional[int] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., catch_up: _Optional[_Union[CatchUp, str]] = ..., key: _Optional[str] = ..., priority: _Optional[int] = ..., traceparent: _Optional[str] = ..., after: _Optional[_Iterable[_Union[AgentRef, _Mapping]]] = ..., on_parent_failure: _Optional[_Union[ParentFailure, str]] = ..., idempotency_key: _Optional[str] = ..., idempotency_window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., keep_result: _Optional[bool] = ..., idempotency_mode: _Optional[_Union[IdempotencyMode, str]] = ..., debounce: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., expire_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., wait_for: _Optional[_Union[WaitFor, _Mapping]] = ...) -> None: ...

class WaitFor(_message.Message):
    __slots__ = ("event", "until", "timeout")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    event: str
    until: _timestamp_pb2.Timestamp
    timeout: _duration_pb2.Duration
    def __init__(self, event: _Optional[str] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class EventDelivery(_message.Message):
    __slots__ = ("event", "payload", "sent_at", "timed_out")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    event: str
    payload: bytes
    sent_at: _timestamp_pb2.Timestamp
    timed_out: bool
    def __init__(self, event: _Optional[str] = ..., payload: _Optional[bytes] = ..., sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., timed_out: _Optional[bool] = ...) -> None: ...

class SignalRequest(_message.Message):
    __slots__ = ("queue", "name", "event", "payload", "request_id")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    event: str
    payload: bytes
    request_id: str
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., event: _Optional[str] = ..., payload: _Optional[bytes] = ..., request_id: _Optional[str] = ...) -> None: ...

class SignalResponse(_message.Message):
    __slots__ = ("delivered", "kept", "duplicate", "consumed", "sent_at")
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    CONSUMED_FIELD_NUMBER: _ClassVar[int]
    SENT_AT_FIELD_NUMBER: _ClassVar[int]
    delivered: bool
    kept: bool
    duplicate: bool
    consumed: bool
    sent_at: _timestamp_pb2.Timestamp
    def __init__(self, delivered: _Optional[bool] = ..., kept: _Optional[bool] = ..., duplicate: _Optional[bool] = ..., consumed: _Optional[bool] = ..., sent_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AgentRef(_message.Message):
    __slots__ = ("queue", "name", "on_failure", "batch")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    on_failure: ParentFailure
    batch: str
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., on_failure: _Optional[_Union[ParentFailure, str]] = ..., batch: _Optional[str] = ...) -> None: ...

class AgentResult(_message.Message):
    __slots__ = ("queue", "name", "finish", "outcome", "result", "token", "finished_at", "message", "traceparent", "batch")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    finish: Finish
    outcome: Outcome
    result: bytes
    token: int
    finished_at: _timestamp_pb2.Timestamp
    message: str
    traceparent: str
    batch: str
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., finish: _Optional[_Union[Finish, str]] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., result: _Optional[bytes] = ..., token: _Optional[int] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message: _Optional[str] = ..., traceparent: _Optional[str] = ..., batch: _Optional[str] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("queue", "agents", "reset_schedule", "request_id")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    RESET_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    queue: str
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    reset_schedule: bool
    request_id: str
    def __init__(self, queue: _Optional[str] = ..., agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., reset_schedule: _Optional[bool] = ..., request_id: _Optional[str] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("created", "updated", "deduplicated", "agents")
    CREATED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    created: int
    updated: int
    deduplicated: int
    agents: _containers.RepeatedCompositeFieldContainer[RegisteredAgent]
    def __init__(self, created: _Optional[int] = ..., updated: _Optional[int] = ..., deduplicated: _Optional[int] = ..., agents: _Optional[_Iterable[_Union[RegisteredAgent, _Mapping]]] = ...) -> None: ...

class RegisteredAgent(_message.Message):
    __slots__ = ("name", "created", "deduplicated", "result", "replaced", "debounced")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCED_FIELD_NUMBER: _ClassVar[int]
    name: str
    created: bool
    deduplicated: bool
    result: AgentResult
    replaced: str
    debounced: bool
    def __init__(self, name: _Optional[str] = ..., created: _Optional[bool] = ..., deduplicated: _Optional[bool] = ..., result: _Optional[_Union[AgentResult, _Mapping]] = ..., replaced: _Optional[str] = ..., debounced: _Optional[bool] = ...) -> None: ...

class UnregisterRequest(_message.Message):
    __slots__ = ("queue", "names", "cascade")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    names: _containers.RepeatedScalarFieldContainer[str]
    cascade: bool
    def __init__(self, queue: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ..., cascade: _Optional[bool] = ...) -> None: ...

class UnregisterResponse(_message.Message):
    __slots__ = ("removed", "cascaded")
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    CASCADED_FIELD_NUMBER: _ClassVar[int]
    removed: int
    cascaded: int
    def __init__(self, removed: _Optional[int] = ..., cascaded: _Optional[int] = ...) -> None: ...

class AcquireRequest(_message.Message):
    __slots__ = ("queue", "worker_id", "max_leases", "wait")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_LEASES_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    worker_id: str
    max_leases: int
    wait: _duration_pb2.Duration
    def __init__(self, queue: _Optional[str] = ..., worker_id: _Optional[str] = ..., max_leases: _Optional[int] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Lease(_message.Message):
    __slots__ = ("queue", "name", "token", "deadline", "attempt", "agent", "parents", "granted_at", "steps", "event")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    GRANTED_AT_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    deadline: _timestamp_pb2.Timestamp
    attempt: int
    agent: Agent
    parents: _containers.RepeatedCompositeFieldContainer[AgentResult]
    granted_at: _timestamp_pb2.Timestamp
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    event: EventDelivery
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., agent: _Optional[_Union[Agent, _Mapping]] = ..., parents: _Optional[_Iterable[_Union[AgentResult, _Mapping]]] = ..., granted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ..., event: _Optional[_Union[EventDelivery, _Mapping]] = ...) -> None: ...

class Step(_message.Message):
    __slots__ = ("name", "result", "recorded_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    result: bytes
    recorded_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., result: _Optional[bytes] = ..., recorded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RecordStepRequest(_message.Message):
    __slots__ = ("queue", "name", "token", "step", "result")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    step: str
    result: bytes
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., step: _Optional[str] = ..., result: _Optional[bytes] = ...) -> None: ...

class RecordStepResponse(_message.Message):
    __slots__ = ("recorded", "step", "steps")
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    recorded: bool
    step: Step
    steps: int
    def __init__(self, recorded: _Optional[bool] = ..., step: _Optional[_Union[Step, _Mapping]] = ..., steps: _Optional[int] = ...) -> None: ...

class AcquireResponse(_message.Message):
    __slots__ = ("leases",)
    LEASES_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[Lease]
    def __init__(self, leases: _Optional[_Iterable[_Union[Lease, _Mapping]]] = ...) -> None: ...

class LeaseRef(_message.Message):
    __slots__ = ("queue", "name", "token", "progress")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    progress: str
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., progress: _Optional[str] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("worker_id", "leases")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    LEASES_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    def __init__(self, worker_id: _Optional[str] = ..., leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ...) -> None: ...

class ExtendedLease(_message.Message):
    __slots__ = ("queue", "name", "token", "deadline")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    deadline: _timestamp_pb2.Timestamp
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("extended", "lost", "cancelled")
    EXTENDED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    extended: _containers.RepeatedCompositeFieldContainer[ExtendedLease]
    lost: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    cancelled: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    def __init__(self, extended: _Optional[_Iterable[_Union[ExtendedLease, _Mapping]]] = ..., lost: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., cancelled: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ("queue", "name", "token", "outcome", "message", "retry_after", "request_id", "error_class", "http_status", "result", "wait_for")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    HTTP_STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    outcome: Outcome
    message: str
    retry_after: _duration_pb2.Duration
    request_id: str
    error_class: str
    http_status: int
    result: bytes
    wait_for: WaitFor
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., message: _Optional[str] = ..., retry_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., request_id: _Optional[str] = ..., error_class: _Optional[str] = ..., http_status: _Optional[int] = ..., result: _Optional[bytes] = ..., wait_for: _Optional[_Union[WaitFor, _Mapping]] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ("next_run_at", "dead_lettered", "removed", "failure_streak", "message_clipped", "outcome", "waiting")
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    FAILURE_STREAK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_CLIPPED_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    next_run_at: _timestamp_pb2.Timestamp
    dead_lettered: bool
    removed: bool
    failure_streak: int
    message_clipped: bool
    outcome: Outcome
    waiting: bool
    def __init__(self, next_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., dead_lettered: _Optional[bool] = ..., removed: _Optional[bool] = ..., failure_streak: _Optional[int] = ..., message_clipped: _Optional[bool] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., waiting: _Optional[bool] = ...) -> None: ...

class CompleteBatchRequest(_message.Message):
    __slots__ = ("completions",)
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    completions: _containers.RepeatedCompositeFieldContainer[CompleteRequest]
    def __init__(self, completions: _Optional[_Iterable[_Union[CompleteRequest, _Mapping]]] = ...) -> None: ...

class CompleteResult(_message.Message):
    __slots__ = ("queue", "name", "token", "lease_lost", "response")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_LOST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    lease_lost: bool
    response: CompleteResponse
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., lease_lost: _Optional[bool] = ..., response: _Optional[_Union[CompleteResponse, _Mapping]] = ...) -> None: ...

class CompleteBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CompleteResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CompleteResult, _Mapping]]] = ...) -> None: ...

class SessionOpen(_message.Message):
    __slots__ = ("queue", "worker_id")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    queue: str
    worker_id: str
    def __init__(self, queue: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class SessionLease(_message.Message):
    __slots__ = ("name", "token", "progress")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: int
    progress: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[int] = ..., progress: _Optional[str] = ...) -> None: ...

class SessionCompletion(_message.Message):
    __slots__ = ("name", "token", "outcome", "message", "retry_after", "error_class", "http_status", "result", "wait_for")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    HTTP_STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: int
    outcome: Outcome
    message: str
    retry_after: _duration_pb2.Duration
    error_class: str
    http_status: int
    result: bytes
    wait_for: WaitFor
    def __init__(self, name: _Optional[str] = ..., token: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., message: _Optional[str] = ..., retry_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., error_class: _Optional[str] = ..., http_status: _Optional[int] = ..., result: _Optional[bytes] = ..., wait_for: _Optional[_Union[WaitFor, _Mapping]] = ...) -> None: ...

class SessionRelease(_message.Message):
    __slots__ = ("name", "token", "delay")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: int
    delay: _duration_pb2.Duration
    def __init__(self, name: _Optional[str] = ..., token: _Optional[int] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class SessionRequest(_message.Message):
    __slots__ = ("open", "credit", "completions", "heartbeats", "releases", "steps")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEATS_FIELD_NUMBER: _ClassVar[int]
    RELEASES_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    open: SessionOpen
    credit: int
    completions: _containers.RepeatedCompositeFieldContainer[SessionCompletion]
    heartbeats: _containers.RepeatedCompositeFieldContainer[SessionLease]
    releases: _containers.RepeatedCompositeFieldContainer[SessionRelease]
    steps: _containers.RepeatedCompositeFieldContainer[SessionStep]
    def __init__(self, open: _Optional[_Union[SessionOpen, _Mapping]] = ..., credit: _Optional[int] = ..., completions: _Optional[_Iterable[_Union[SessionCompletion, _Mapping]]] = ..., heartbeats: _Optional[_Iterable[_Union[SessionLease, _Mapping]]] = ..., releases: _Optional[_Iterable[_Union[SessionRelease, _Mapping]]] = ..., steps: _Optional[_Iterable[_Union[SessionStep, _Mapping]]] = ...) -> None: ...

class SessionStep(_message.Message):
    __slots__ = ("name", "token", "step", "result")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: int
    step: str
    result: bytes
    def __init__(self, name: _Optional[str] = ..., token: _Optional[int] = ..., step: _Optional[str] = ..., result: _Optional[bytes] = ...) -> None: ...

class StepResult(_message.Message):
    __slots__ = ("name", "token", "step", "lease_lost", "response", "refused")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    LEASE_LOST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: int
    step: str
    lease_lost: bool
    response: RecordStepResponse
    refused: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[int] = ..., step: _Optional[str] = ..., lease_lost: _Optional[bool] = ..., response: _Optional[_Union[RecordStepResponse, _Mapping]] = ..., refused: _Optional[str] = ...) -> None: ...

class SessionResponse(_message.Message):
    __slots__ = ("leases", "completed", "extended", "lost", "released", "cancelled", "steps")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[Lease]
    completed: _containers.RepeatedCompositeFieldContainer[CompleteResult]
    extended: _containers.RepeatedCompositeFieldContainer[ExtendedLease]
    lost: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    released: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    cancelled: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    steps: _containers.RepeatedCompositeFieldContainer[StepResult]
    def __init__(self, leases: _Optional[_Iterable[_Union[Lease, _Mapping]]] = ..., completed: _Optional[_Iterable[_Union[CompleteResult, _Mapping]]] = ..., extended: _Optional[_Iterable[_Union[ExtendedLease, _Mapping]]] = ..., lost: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., released: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., cancelled: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ..., steps: _Optional[_Iterable[_Union[StepResult, _Mapping]]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("queue", "name", "token", "delay")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    token: int
    delay: _duration_pb2.Duration
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., token: _Optional[int] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ("next_run_at",)
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    next_run_at: _timestamp_pb2.Timestamp
    def __init__(self, next_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetAgentRequest(_message.Message):
    __slots__ = ("queue", "name")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GetAgentResponse(_message.Message):
    __slots__ = ("agent",)
    AGENT_FIELD_NUMBER: _ClassVar[int]
    agent: AgentStatus
    def __init__(self, agent: _Optional[_Union[AgentStatus, _Mapping]] = ...) -> None: ...

class AgentStatus(_message.Message):
    __slots__ = ("agent", "state", "next_run_at", "deadline", "holder", "token", "failure_streak", "progress", "cancel_requested", "last_error_class", "last_error_message", "parents", "parents_total", "parents_pending", "children", "steps", "waiting_for", "signals_pending")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    FAILURE_STREAK_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    PARENTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PARENTS_PENDING_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_PENDING_FIELD_NUMBER: _ClassVar[int]
    agent: Agent
    state: AgentState
    next_run_at: _timestamp_pb2.Timestamp
    deadline: _timestamp_pb2.Timestamp
    holder: str
    token: int
    failure_streak: int
    progress: str
    cancel_requested: bool
    last_error_class: str
    last_error_message: str
    parents: _containers.RepeatedCompositeFieldContainer[ParentStatus]
    parents_total: int
    parents_pending: int
    children: _containers.RepeatedCompositeFieldContainer[AgentRef]
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    waiting_for: WaitFor
    signals_pending: int
    def __init__(self, agent: _Optional[_Union[Agent, _Mapping]] = ..., state: _Optional[_Union[AgentState, str]] = ..., next_run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., holder: _Optional[str] = ..., token: _Optional[int] = ..., failure_streak: _Optional[int] = ..., progress: _Optional[str] = ..., cancel_requested: _Optional[bool] = ..., last_error_class: _Optional[str] = ..., last_error_message: _Optional[str] = ..., parents: _Optional[_Iterable[_Union[ParentStatus, _Mapping]]] = ..., parents_total: _Optional[int] = ..., parents_pending: _Optional[int] = ..., children: _Optional[_Iterable[_Union[AgentRef, _Mapping]]] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ..., waiting_for: _Optional[_Union[WaitFor, _Mapping]] = ..., signals_pending: _Optional[int] = ...) -> None: ...

class ParentStatus(_message.Message):
    __slots__ = ("parent", "result")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    parent: AgentRef
    result: AgentResult
    def __init__(self, parent: _Optional[_Union[AgentRef, _Mapping]] = ..., result: _Optional[_Union[AgentResult, _Mapping]] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ("queue", "page_size", "page_token", "name_prefix")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    queue: str
    page_size: int
    page_token: str
    name_prefix: str
    def __init__(self, queue: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., name_prefix: _Optional[str] = ...) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents", "next_page_token")
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[AgentStatus]
    next_page_token: str
    def __init__(self, agents: _Optional[_Iterable[_Union[AgentStatus, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelRunRequest(_message.Message):
    __slots__ = ("queue", "name", "cascade")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    cascade: bool
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., cascade: _Optional[bool] = ...) -> None: ...

class CancelRunResponse(_message.Message):
    __slots__ = ("requested", "token", "cascaded")
    REQUESTED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    CASCADED_FIELD_NUMBER: _ClassVar[int]
    requested: bool
    token: int
    cascaded: int
    def __init__(self, requested: _Optional[bool] = ..., token: _Optional[int] = ..., cascaded: _Optional[int] = ...) -> None: ...

class AwaitRequest(_message.Message):
    __slots__ = ("queue", "name", "wait", "after_token")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    wait: _duration_pb2.Duration
    after_token: int
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., after_token: _Optional[int] = ...) -> None: ...

class AwaitResponse(_message.Message):
    __slots__ = ("done", "result", "state", "result_not_kept", "steps")
    DONE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RESULT_NOT_KEPT_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    done: bool
    result: AgentResult
    state: AgentState
    result_not_kept: bool
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    def __init__(self, done: _Optional[bool] = ..., result: _Optional[_Union[AgentResult, _Mapping]] = ..., state: _Optional[_Union[AgentState, str]] = ..., result_not_kept: _Optional[bool] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ...) -> None: ...

class RegisterBatchRequest(_message.Message):
    __slots__ = ("batch", "queue", "agents", "callback_queue", "on_success", "on_complete", "close")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    ON_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ON_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    batch: str
    queue: str
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    callback_queue: str
    on_success: _containers.RepeatedCompositeFieldContainer[Agent]
    on_complete: _containers.RepeatedCompositeFieldContainer[Agent]
    close: bool
    def __init__(self, batch: _Optional[str] = ..., queue: _Optional[str] = ..., agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., callback_queue: _Optional[str] = ..., on_success: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., on_complete: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., close: _Optional[bool] = ...) -> None: ...

class BatchStatus(_message.Message):
    __slots__ = ("batch", "total", "pending", "succeeded", "failed", "closed", "done", "callbacks", "created_at", "done_at")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    CALLBACKS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DONE_AT_FIELD_NUMBER: _ClassVar[int]
    batch: str
    total: int
    pending: int
    succeeded: int
    failed: int
    closed: bool
    done: bool
    callbacks: _containers.RepeatedCompositeFieldContainer[AgentRef]
    created_at: _timestamp_pb2.Timestamp
    done_at: _timestamp_pb2.Timestamp
    def __init__(self, batch: _Optional[str] = ..., total: _Optional[int] = ..., pending: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., closed: _Optional[bool] = ..., done: _Optional[bool] = ..., callbacks: _Optional[_Iterable[_Union[AgentRef, _Mapping]]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., done_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RegisterBatchResponse(_message.Message):
    __slots__ = ("batch_created", "created", "status")
    BATCH_CREATED_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    batch_created: bool
    created: int
    status: BatchStatus
    def __init__(self, batch_created: _Optional[bool] = ..., created: _Optional[int] = ..., status: _Optional[_Union[BatchStatus, _Mapping]] = ...) -> None: ...

class CloseBatchRequest(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: str
    def __init__(self, batch: _Optional[str] = ...) -> None: ...

class CloseBatchResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: BatchStatus
    def __init__(self, status: _Optional[_Union[BatchStatus, _Mapping]] = ...) -> None: ...

class GetBatchRequest(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: str
    def __init__(self, batch: _Optional[str] = ...) -> None: ...

class GetBatchResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: BatchStatus
    def __init__(self, status: _Optional[_Union[BatchStatus, _Mapping]] = ...) -> None: ...

class WatchAgentRequest(_message.Message):
    __slots__ = ("queue", "name", "after_token", "wait")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    AFTER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    name: str
    after_token: int
    wait: _duration_pb2.Duration
    def __init__(self, queue: _Optional[str] = ..., name: _Optional[str] = ..., after_token: _Optional[int] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WatchAgentResponse(_message.Message):
    __slots__ = ("update", "state", "token", "sequence", "attempt", "progress", "steps", "finish")
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    update: WatchUpdate
    state: AgentState
    token: int
    sequence: int
    attempt: int
    progress: str
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    finish: AwaitResponse
    def __init__(self, update: _Optional[_Union[WatchUpdate, str]] = ..., state: _Optional[_Union[AgentState, str]] = ..., token: _Optional[int] = ..., sequence: _Optional[int] = ..., attempt: _Optional[int] = ..., progress: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ..., finish: _Optional[_Union[AwaitResponse, _Mapping]] = ...) -> None: ...
