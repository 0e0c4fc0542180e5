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

class SourceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_KIND_UNSPECIFIED: _ClassVar[SourceKind]
    SOURCE_KIND_QUEUE: _ClassVar[SourceKind]
    SOURCE_KIND_POOL: _ClassVar[SourceKind]
    SOURCE_KIND_RECEIVER: _ClassVar[SourceKind]

class HealthStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HEALTH_STATUS_UNSPECIFIED: _ClassVar[HealthStatus]
    HEALTH_STATUS_HEALTHY: _ClassVar[HealthStatus]
    HEALTH_STATUS_DEGRADED: _ClassVar[HealthStatus]
    HEALTH_STATUS_UNHEALTHY: _ClassVar[HealthStatus]
SOURCE_KIND_UNSPECIFIED: SourceKind
SOURCE_KIND_QUEUE: SourceKind
SOURCE_KIND_POOL: SourceKind
SOURCE_KIND_RECEIVER: SourceKind
HEALTH_STATUS_UNSPECIFIED: HealthStatus
HEALTH_STATUS_HEALTHY: HealthStatus
HEALTH_STATUS_DEGRADED: HealthStatus
HEALTH_STATUS_UNHEALTHY: HealthStatus

class Source(_message.Message):
    __slots__ = ("kind", "name")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    kind: SourceKind
    name: str
    def __init__(self, kind: _Optional[_Union[SourceKind, str]] = ..., name: _Optional[str] = ...) -> None: ...

class GetHealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SourceHealth(_message.Message):
    __slots__ = ("source", "size", "oldest_age", "average_age", "stuck", "dead_lettered", "processing_rate", "status", "reasons", "in_use", "idle", "paused", "limits", "rate_tokens", "expired")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    OLDEST_AGE_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_AGE_FIELD_NUMBER: _ClassVar[int]
    STUCK_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_RATE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    IN_USE_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RATE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    source: Source
    size: int
    oldest_age: _duration_pb2.Duration
    average_age: _duration_pb2.Duration
    stuck: int
    dead_lettered: int
    processing_rate: float
    status: HealthStatus
    reasons: _containers.RepeatedScalarFieldContainer[str]
    in_use: int
    idle: int
    paused: bool
    limits: QueueLimits
    rate_tokens: float
    expired: int
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., size: _Optional[int] = ..., oldest_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., average_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., stuck: _Optional[int] = ..., dead_lettered: _Optional[int] = ..., processing_rate: _Optional[float] = ..., status: _Optional[_Union[HealthStatus, str]] = ..., reasons: _Optional[_Iterable[str]] = ..., in_use: _Optional[int] = ..., idle: _Optional[int] = ..., paused: _Optional[bool] = ..., limits: _Optional[_Union[QueueLimits, _Mapping]] = ..., rate_tokens: _Optional[float] = ..., expired: _Optional[int] = ...) -> None: ...

class GetHealthResponse(_message.Message):
    __slots__ = ("status", "sources", "checked_at")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    CHECKED_AT_FIELD_NUMBER: _ClassVar[int]
    status: HealthStatus
    sources: _containers.RepeatedCompositeFieldContainer[SourceHealth]
    checked_at: _timestamp_pb2.Timestamp
    def __init__(self, status: _Optional[_Union[HealthStatus, str]] = ..., sources: _Optional[_Iterable[_Union[SourceHealth, _Mapping]]] = ..., checked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("source", "id", "error_class", "message", "failed_at", "attempts", "holder", "payload", "attributes")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    source: Source
    id: str
    error_class: str
    message: str
    failed_at: _timestamp_pb2.Timestamp
    attempts: int
    holder: str
    payload: bytes
    attributes: _containers.ScalarMap[str, str]
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., id: _Optional[str] = ..., error_class: _Optional[str] = ..., message: _Optional[str] = ..., failed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempts: _Optional[int] = ..., holder: _Optional[str] = ..., payload: _Optional[bytes] = ..., attributes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ("source", "page_size", "page_token")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    source: Source
    page_size: int
    page_token: str
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ("dead_letters", "next_page_token")
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    next_page_token: str
    def __init__(self, dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RetryDeadLetterRequest(_message.Message):
    __slots__ = ("source", "id")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    source: Source
    id: str
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class RetryDeadLetterResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteDeadLetterRequest(_message.Message):
    __slots__ = ("source", "id")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    source: Source
    id: str
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class DeleteDeadLetterResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PurgeRequest(_message.Message):
    __slots__ = ("dry_run",)
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    dry_run: bool
    def __init__(self, dry_run: _Optional[bool] = ...) -> None: ...

class PurgedItem(_message.Message):
    __slots__ = ("source", "id", "reason", "action")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    source: Source
    id: str
    reason: str
    action: str
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., id: _Optional[str] = ..., reason: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class PurgeResponse(_message.Message):
    __slots__ = ("items", "dry_run")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[PurgedItem]
    dry_run: bool
    def __init__(self, items: _Optional[_Iterable[_Union[PurgedItem, _Mapping]]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ("per_second", "burst")
    PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    per_second: float
    burst: int
    def __init__(self, per_second: _Optional[float] = ..., burst: _Optional[int] = ...) -> None: ...

class QueueLimits(_message.Message):
    __slots__ = ("concurrency", "rate", "key_concurrency", "key_rate", "priority_aging", "group")
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    KEY_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    KEY_RATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_AGING_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    rate: RateLimit
    key_concurrency: int
    key_rate: RateLimit
    priority_aging: _duration_pb2.Duration
    group: str
    def __init__(self, concurrency: _Optional[int] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ..., key_concurrency: _Optional[int] = ..., key_rate: _Optional[_Union[RateLimit, _Mapping]] = ..., priority_aging: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., group: _Optional[str] = ...) -> None: ...

class GroupLimits(_message.Message):
    __slots__ = ("concurrency", "rate", "key_concurrency")
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    KEY_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    rate: RateLimit
    key_concurrency: int
    def __init__(self, concurrency: _Optional[int] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ..., key_concurrency: _Optional[int] = ...) -> None: ...

class GroupLimitsEntry(_message.Message):
    __slots__ = ("group", "limits", "held", "rate_tokens")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    RATE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    group: str
    limits: GroupLimits
    held: int
    rate_tokens: float
    def __init__(self, group: _Optional[str] = ..., limits: _Optional[_Union[GroupLimits, _Mapping]] = ..., held: _Optional[int] = ..., rate_tokens: _Optional[float] = ...) -> None: ...

class SetGroupLimitsRequest(_message.Message):
    __slots__ = ("group", "limits")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    group: str
    limits: GroupLimits
    def __init__(self, group: _Optional[str] = ..., limits: _Optional[_Union[GroupLimits, _Mapping]] = ...) -> None: ...

class SetGroupLimitsResponse(_message.Message):
    __slots__ = ("group", "replaced")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    group: GroupLimitsEntry
    replaced: bool
    def __init__(self, group: _Optional[_Union[GroupLimitsEntry, _Mapping]] = ..., replaced: _Optional[bool] = ...) -> None: ...

class GetGroupLimitsRequest(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: str
    def __init__(self, group: _Optional[str] = ...) -> None: ...

class GetGroupLimitsResponse(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: GroupLimitsEntry
    def __init__(self, group: _Optional[_Union[GroupLimitsEntry, _Mapping]] = ...) -> None: ...

class ListGroupLimitsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListGroupLimitsResponse(_message.Message):
    __slots__ = ("groups", "next_page_token")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupLimitsEntry]
    next_page_token: str
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupLimitsEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SetLimitsRequest(_message.Message):
    __slots__ = ("queue", "limits", "create")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    CREATE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    limits: QueueLimits
    create: bool
    def __init__(self, queue: _Optional[str] = ..., limits: _Optional[_Union[QueueLimits, _Mapping]] = ..., create: _Optional[bool] = ...) -> None: ...

class SetLimitsResponse(_message.Message):
    __slots__ = ("limits",)
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: QueueLimits
    def __init__(self, limits: _Optional[_Union[QueueLimits, _Mapping]] = ...) -> None: ...

class KeyLimits(_message.Message):
    __slots__ = ("weight", "concurrency", "rate")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    weight: int
    concurrency: int
    rate: RateLimit
    def __init__(self, weight: _Optional[int] = ..., concurrency: _Optional[int] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...

class KeyLimitsEntry(_message.Message):
    __slots__ = ("key", "limits", "held")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    key: str
    limits: KeyLimits
    held: int
    def __init__(self, key: _Optional[str] = ..., limits: _Optional[_Union[KeyLimits, _Mapping]] = ..., held: _Optional[int] = ...) -> None: ...

class SetKeyLimitsRequest(_message.Message):
    __slots__ = ("queue", "key", "limits")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    key: str
    limits: KeyLimits
    def __init__(self, queue: _Optional[str] = ..., key: _Optional[str] = ..., limits: _Optional[_Union[KeyLimits, _Mapping]] = ...) -> None: ...

class SetKeyLimitsResponse(_message.Message):
    __slots__ = ("key_limits", "replaced")
    KEY_LIMITS_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    key_limits: KeyLimitsEntry
    replaced: bool
    def __init__(self, key_limits: _Optional[_Union[KeyLimitsEntry, _Mapping]] = ..., replaced: _Optional[bool] = ...) -> None: ...

class GetKeyLimitsRequest(_message.Message):
    __slots__ = ("queue", "key")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    queue: str
    key: str
    def __init__(self, queue: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class GetKeyLimitsResponse(_message.Message):
    __slots__ = ("key_limits",)
    KEY_LIMITS_FIELD_NUMBER: _ClassVar[int]
    key_limits: KeyLimitsEntry
    def __init__(self, key_limits: _Optional[_Union[KeyLimitsEntry, _Mapping]] = ...) -> None: ...

class ListKeyLimitsRequest(_message.Message):
    __slots__ = ("queue", "page_size", "page_token")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    queue: str
    page_size: int
    page_token: str
    def __init__(self, queue: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListKeyLimitsResponse(_message.Message):
    __slots__ = ("keys", "next_page_token")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[KeyLimitsEntry]
    next_page_token: str
    def __init__(self, keys: _Optional[_Iterable[_Union[KeyLimitsEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RecountKeysRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class RecountKeysResponse(_message.Message):
    __slots__ = ("leases", "corrected")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    CORRECTED_FIELD_NUMBER: _ClassVar[int]
    leases: int
    corrected: int
    def __init__(self, leases: _Optional[int] = ..., corrected: _Optional[int] = ...) -> None: ...

class PauseRequest(_message.Message):
    __slots__ = ("source", "create")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CREATE_FIELD_NUMBER: _ClassVar[int]
    source: Source
    create: bool
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., create: _Optional[bool] = ...) -> None: ...

class PauseResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ("source", "create")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CREATE_FIELD_NUMBER: _ClassVar[int]
    source: Source
    create: bool
    def __init__(self, source: _Optional[_Union[Source, _Mapping]] = ..., create: _Optional[bool] = ...) -> None: ...

class ResumeResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...
