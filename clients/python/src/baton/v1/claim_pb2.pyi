import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Resource(_message.Message):
    __slots__ = ("id", "attributes")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    id: str
    attributes: _containers.ScalarMap[str, str]
    def __init__(self, id: _Optional[str] = ..., attributes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class OfferRequest(_message.Message):
    __slots__ = ("pool", "resources", "request_id")
    POOL_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    pool: str
    resources: _containers.RepeatedCompositeFieldContainer[Resource]
    request_id: str
    def __init__(self, pool: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class OfferResponse(_message.Message):
    __slots__ = ("idle", "handed", "duplicates")
    IDLE_FIELD_NUMBER: _ClassVar[int]
    HANDED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    idle: int
    handed: int
    duplicates: int
    def __init__(self, idle: _Optional[int] = ..., handed: _Optional[int] = ..., duplicates: _Optional[int] = ...) -> None: ...

class ClaimRequest(_message.Message):
    __slots__ = ("pool", "claimer_id", "attributes", "wait", "request_id", "hold")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    POOL_FIELD_NUMBER: _ClassVar[int]
    CLAIMER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    pool: str
    claimer_id: str
    attributes: _containers.ScalarMap[str, str]
    wait: _duration_pb2.Duration
    request_id: str
    hold: _duration_pb2.Duration
    def __init__(self, pool: _Optional[str] = ..., claimer_id: _Optional[str] = ..., attributes: _Optional[_Mapping[str, str]] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., request_id: _Optional[str] = ..., hold: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ClaimResponse(_message.Message):
    __slots__ = ("resource", "token", "claimed_at")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_AT_FIELD_NUMBER: _ClassVar[int]
    resource: Resource
    token: int
    claimed_at: _timestamp_pb2.Timestamp
    def __init__(self, resource: _Optional[_Union[Resource, _Mapping]] = ..., token: _Optional[int] = ..., claimed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReturnRequest(_message.Message):
    __slots__ = ("pool", "resource_id", "token", "reuse", "request_id")
    POOL_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    REUSE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    pool: str
    resource_id: str
    token: int
    reuse: bool
    request_id: str
    def __init__(self, pool: _Optional[str] = ..., resource_id: _Optional[str] = ..., token: _Optional[int] = ..., reuse: _Optional[bool] = ..., request_id: _Optional[str] = ...) -> None: ...

class ReturnResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FailRequest(_message.Message):
    __slots__ = ("pool", "resource_id", "token", "error", "request_id")
    POOL_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    pool: str
    resource_id: str
    token: int
    error: str
    request_id: str
    def __init__(self, pool: _Optional[str] = ..., resource_id: _Optional[str] = ..., token: _Optional[int] = ..., error: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class FailResponse(_message.Message):
    __slots__ = ("error_clipped",)
    ERROR_CLIPPED_FIELD_NUMBER: _ClassVar[int]
    error_clipped: bool
    def __init__(self, error_clipped: _Optional[bool] = ...) -> None: ...

class GetPoolRequest(_message.Message):
    __slots__ = ("pool",)
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class PoolStatus(_message.Message):
    __slots__ = ("pool", "idle", "claimed", "waiting_claims", "oldest_wait", "scale_up_pending", "dead_lettered")
    POOL_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_FIELD_NUMBER: _ClassVar[int]
    WAITING_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_WAIT_FIELD_NUMBER: _ClassVar[int]
    SCALE_UP_PENDING_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    pool: str
    idle: int
    claimed: int
    waiting_claims: int
    oldest_wait: _duration_pb2.Duration
    scale_up_pending: bool
    dead_lettered: int
    def __init__(self, pool: _Optional[str] = ..., idle: _Optional[int] = ..., claimed: _Optional[int] = ..., waiting_claims: _Optional[int] = ..., oldest_wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., scale_up_pending: _Optional[bool] = ..., dead_lettered: _Optional[int] = ...) -> None: ...

class GetPoolResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: PoolStatus
    def __init__(self, status: _Optional[_Union[PoolStatus, _Mapping]] = ...) -> None: ...

class WatchPoolRequest(_message.Message):
    __slots__ = ("pool",)
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: str
    def __init__(self, pool: _Optional[str] = ...) -> None: ...

class WatchPoolResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: PoolStatus
    def __init__(self, status: _Optional[_Union[PoolStatus, _Mapping]] = ...) -> None: ...
