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

class LeadershipEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LEADERSHIP_EVENT_KIND_UNSPECIFIED: _ClassVar[LeadershipEventKind]
    LEADERSHIP_EVENT_KIND_CURRENT: _ClassVar[LeadershipEventKind]
    LEADERSHIP_EVENT_KIND_ELECTED: _ClassVar[LeadershipEventKind]
    LEADERSHIP_EVENT_KIND_RESIGNED: _ClassVar[LeadershipEventKind]
    LEADERSHIP_EVENT_KIND_EXPIRED: _ClassVar[LeadershipEventKind]

class TermEnd(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TERM_END_UNSPECIFIED: _ClassVar[TermEnd]
    TERM_END_RESIGNED: _ClassVar[TermEnd]
    TERM_END_EXPIRED: _ClassVar[TermEnd]
    TERM_END_SUPERSEDED: _ClassVar[TermEnd]
LEADERSHIP_EVENT_KIND_UNSPECIFIED: LeadershipEventKind
LEADERSHIP_EVENT_KIND_CURRENT: LeadershipEventKind
LEADERSHIP_EVENT_KIND_ELECTED: LeadershipEventKind
LEADERSHIP_EVENT_KIND_RESIGNED: LeadershipEventKind
LEADERSHIP_EVENT_KIND_EXPIRED: LeadershipEventKind
TERM_END_UNSPECIFIED: TermEnd
TERM_END_RESIGNED: TermEnd
TERM_END_EXPIRED: TermEnd
TERM_END_SUPERSEDED: TermEnd

class CampaignRequest(_message.Message):
    __slots__ = ("election", "candidate_id", "ttl", "wait")
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    election: str
    candidate_id: str
    ttl: _duration_pb2.Duration
    wait: _duration_pb2.Duration
    def __init__(self, election: _Optional[str] = ..., candidate_id: _Optional[str] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CampaignResponse(_message.Message):
    __slots__ = ("is_leader", "leader_id", "token", "expires_at", "renew_in", "step_down_in")
    IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    RENEW_IN_FIELD_NUMBER: _ClassVar[int]
    STEP_DOWN_IN_FIELD_NUMBER: _ClassVar[int]
    is_leader: bool
    leader_id: str
    token: int
    expires_at: _timestamp_pb2.Timestamp
    renew_in: _duration_pb2.Duration
    step_down_in: _duration_pb2.Duration
    def __init__(self, is_leader: _Optional[bool] = ..., leader_id: _Optional[str] = ..., token: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., renew_in: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., step_down_in: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class RenewRequest(_message.Message):
    __slots__ = ("election", "candidate_id", "token")
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    election: str
    candidate_id: str
    token: int
    def __init__(self, election: _Optional[str] = ..., candidate_id: _Optional[str] = ..., token: _Optional[int] = ...) -> None: ...

class RenewResponse(_message.Message):
    __slots__ = ("expires_at", "renew_in", "step_down_in")
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    RENEW_IN_FIELD_NUMBER: _ClassVar[int]
    STEP_DOWN_IN_FIELD_NUMBER: _ClassVar[int]
    expires_at: _timestamp_pb2.Timestamp
    renew_in: _duration_pb2.Duration
    step_down_in: _duration_pb2.Duration
    def __init__(self, expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., renew_in: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., step_down_in: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ResignRequest(_message.Message):
    __slots__ = ("election", "candidate_id", "token")
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    election: str
    candidate_id: str
    token: int
    def __init__(self, election: _Optional[str] = ..., candidate_id: _Optional[str] = ..., token: _Optional[int] = ...) -> None: ...

class ResignResponse(_message.Message):
    __slots__ = ("resigned_at",)
    RESIGNED_AT_FIELD_NUMBER: _ClassVar[int]
    resigned_at: _timestamp_pb2.Timestamp
    def __init__(self, resigned_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetLeaderRequest(_message.Message):
    __slots__ = ("election",)
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    election: str
    def __init__(self, election: _Optional[str] = ...) -> None: ...

class GetLeaderResponse(_message.Message):
    __slots__ = ("leader_id", "token", "expires_at")
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    leader_id: str
    token: int
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, leader_id: _Optional[str] = ..., token: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ObserveRequest(_message.Message):
    __slots__ = ("election",)
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    election: str
    def __init__(self, election: _Optional[str] = ...) -> None: ...

class ObserveResponse(_message.Message):
    __slots__ = ("kind", "leader_id", "token", "expires_at")
    KIND_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    kind: LeadershipEventKind
    leader_id: str
    token: int
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, kind: _Optional[_Union[LeadershipEventKind, str]] = ..., leader_id: _Optional[str] = ..., token: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListElectionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ElectionSummary(_message.Message):
    __slots__ = ("election", "leader_id", "token", "expires_at", "last_term_started_at")
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_TERM_STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    election: str
    leader_id: str
    token: int
    expires_at: _timestamp_pb2.Timestamp
    last_term_started_at: _timestamp_pb2.Timestamp
    def __init__(self, election: _Optional[str] = ..., leader_id: _Optional[str] = ..., token: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_term_started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListElectionsResponse(_message.Message):
    __slots__ = ("elections", "next_page_token")
    ELECTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    elections: _containers.RepeatedCompositeFieldContainer[ElectionSummary]
    next_page_token: str
    def __init__(self, elections: _Optional[_Iterable[_Union[ElectionSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetElectionHistoryRequest(_message.Message):
    __slots__ = ("election", "limit")
    ELECTION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    election: str
    limit: int
    def __init__(self, election: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ElectionTerm(_message.Message):
    __slots__ = ("token", "leader_id", "started_at", "ended_at", "end", "expires_at")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    token: int
    leader_id: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    end: TermEnd
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, token: _Optional[int] = ..., leader_id: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[TermEnd, str]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetElectionHistoryResponse(_message.Message):
    __slots__ = ("terms",)
    TERMS_FIELD_NUMBER: _ClassVar[int]
    terms: _containers.RepeatedCompositeFieldContainer[ElectionTerm]
    def __init__(self, terms: _Optional[_Iterable[_Union[ElectionTerm, _Mapping]]] = ...) -> None: ...
