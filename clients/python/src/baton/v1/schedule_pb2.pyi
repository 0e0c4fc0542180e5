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

class MessageState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MESSAGE_STATE_UNSPECIFIED: _ClassVar[MessageState]
    MESSAGE_STATE_SCHEDULED: _ClassVar[MessageState]
    MESSAGE_STATE_IN_FLIGHT: _ClassVar[MessageState]
MESSAGE_STATE_UNSPECIFIED: MessageState
MESSAGE_STATE_SCHEDULED: MessageState
MESSAGE_STATE_IN_FLIGHT: MessageState

class ListMessagesRequest(_message.Message):
    __slots__ = ("receiver", "state", "page_size", "page_token", "payload_bytes")
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    receiver: str
    state: MessageState
    page_size: int
    page_token: str
    payload_bytes: int
    def __init__(self, receiver: _Optional[str] = ..., state: _Optional[_Union[MessageState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., payload_bytes: _Optional[int] = ...) -> None: ...

class MessageInfo(_message.Message):
    __slots__ = ("id", "state", "deliver_at", "delivery_count", "key", "ack_deadline", "consumer_id", "token", "payload_bytes", "payload_head")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ACK_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_HEAD_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: MessageState
    deliver_at: _timestamp_pb2.Timestamp
    delivery_count: int
    key: str
    ack_deadline: _timestamp_pb2.Timestamp
    consumer_id: str
    token: int
    payload_bytes: int
    payload_head: bytes
    def __init__(self, id: _Optional[str] = ..., state: _Optional[_Union[MessageState, str]] = ..., deliver_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., delivery_count: _Optional[int] = ..., key: _Optional[str] = ..., ack_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., consumer_id: _Optional[str] = ..., token: _Optional[int] = ..., payload_bytes: _Optional[int] = ..., payload_head: _Optional[bytes] = ...) -> None: ...

class ListMessagesResponse(_message.Message):
    __slots__ = ("messages", "next_page_token")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[MessageInfo]
    next_page_token: str
    def __init__(self, messages: _Optional[_Iterable[_Union[MessageInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ScheduleRequest(_message.Message):
    __slots__ = ("receiver", "payload", "deliver_at", "delay", "key", "traceparent", "request_id", "key_window")
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_WINDOW_FIELD_NUMBER: _ClassVar[int]
    receiver: str
    payload: bytes
    deliver_at: _timestamp_pb2.Timestamp
    delay: _duration_pb2.Duration
    key: str
    traceparent: str
    request_id: str
    key_window: _duration_pb2.Duration
    def __init__(self, receiver: _Optional[str] = ..., payload: _Optional[bytes] = ..., deliver_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., key: _Optional[str] = ..., traceparent: _Optional[str] = ..., request_id: _Optional[str] = ..., key_window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ScheduleResponse(_message.Message):
    __slots__ = ("id", "deliver_at", "created", "key_held_until")
    ID_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    KEY_HELD_UNTIL_FIELD_NUMBER: _ClassVar[int]
    id: str
    deliver_at: _timestamp_pb2.Timestamp
    created: bool
    key_held_until: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., deliver_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created: _Optional[bool] = ..., key_held_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("receiver", "consumer_id", "max_in_flight")
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    receiver: str
    consumer_id: str
    max_in_flight: int
    def __init__(self, receiver: _Optional[str] = ..., consumer_id: _Optional[str] = ..., max_in_flight: _Optional[int] = ...) -> None: ...

class SubscribeResponse(_message.Message):
    __slots__ = ("id", "payload", "deliver_at", "delivery_count", "token", "traceparent")
    ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    payload: bytes
    deliver_at: _timestamp_pb2.Timestamp
    delivery_count: int
    token: int
    traceparent: str
    def __init__(self, id: _Optional[str] = ..., payload: _Optional[bytes] = ..., deliver_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., delivery_count: _Optional[int] = ..., token: _Optional[int] = ..., traceparent: _Optional[str] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("receiver", "id", "token", "request_id")
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    receiver: str
    id: str
    token: int
    request_id: str
    def __init__(self, receiver: _Optional[str] = ..., id: _Optional[str] = ..., token: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("receiver", "id")
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    receiver: str
    id: str
    def __init__(self, receiver: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ScheduleBatchRequest(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[ScheduleRequest]
    def __init__(self, messages: _Optional[_Iterable[_Union[ScheduleRequest, _Mapping]]] = ...) -> None: ...

class ScheduleBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ScheduleResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[ScheduleResponse, _Mapping]]] = ...) -> None: ...

class AckBatchRequest(_message.Message):
    __slots__ = ("acks",)
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[AckRequest]
    def __init__(self, acks: _Optional[_Iterable[_Union[AckRequest, _Mapping]]] = ...) -> None: ...

class AckResult(_message.Message):
    __slots__ = ("receiver", "id", "lease_lost")
    RECEIVER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_LOST_FIELD_NUMBER: _ClassVar[int]
    receiver: str
    id: str
    lease_lost: bool
    def __init__(self, receiver: _Optional[str] = ..., id: _Optional[str] = ..., lease_lost: _Optional[bool] = ...) -> None: ...

class AckBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AckResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AckResult, _Mapping]]] = ...) -> None: ...

class ReceiveRequest(_message.Message):
    __slots__ = ("open", "acks")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    open: SubscribeRequest
    acks: _containers.RepeatedCompositeFieldContainer[ReceiveAck]
    def __init__(self, open: _Optional[_Union[SubscribeRequest, _Mapping]] = ..., acks: _Optional[_Iterable[_Union[ReceiveAck, _Mapping]]] = ...) -> None: ...

class ReceiveAck(_message.Message):
    __slots__ = ("id", "token")
    ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    id: str
    token: int
    def __init__(self, id: _Optional[str] = ..., token: _Optional[int] = ...) -> None: ...

class ReceiveResponse(_message.Message):
    __slots__ = ("messages", "acked", "lost")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ACKED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[SubscribeResponse]
    acked: _containers.RepeatedCompositeFieldContainer[ReceiveAck]
    lost: _containers.RepeatedCompositeFieldContainer[ReceiveAck]
    def __init__(self, messages: _Optional[_Iterable[_Union[SubscribeResponse, _Mapping]]] = ..., acked: _Optional[_Iterable[_Union[ReceiveAck, _Mapping]]] = ..., lost: _Optional[_Iterable[_Union[ReceiveAck, _Mapping]]] = ...) -> None: ...
