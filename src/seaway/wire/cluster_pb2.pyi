from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Ack(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Copy(_message.Message):
    __slots__ = ("lsn", "kind", "payload", "wave", "recovery_epoch", "timestamp_ms")
    LSN_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    WAVE_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    lsn: int
    kind: int
    payload: bytes
    wave: int
    recovery_epoch: int
    timestamp_ms: int
    def __init__(self, lsn: _Optional[int] = ..., kind: _Optional[int] = ..., payload: _Optional[bytes] = ..., wave: _Optional[int] = ..., recovery_epoch: _Optional[int] = ..., timestamp_ms: _Optional[int] = ...) -> None: ...

class Store(_message.Message):
    __slots__ = ("log_id", "copy", "lng")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    COPY_FIELD_NUMBER: _ClassVar[int]
    LNG_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    copy: Copy
    lng: int
    def __init__(self, log_id: _Optional[int] = ..., copy: _Optional[_Union[Copy, _Mapping]] = ..., lng: _Optional[int] = ...) -> None: ...

class Stored(_message.Message):
    __slots__ = ("log_id", "lsn", "wave", "recovery_epoch", "node", "preempted_by")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    WAVE_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_BY_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn: int
    wave: int
    recovery_epoch: int
    node: int
    preempted_by: int
    def __init__(self, log_id: _Optional[int] = ..., lsn: _Optional[int] = ..., wave: _Optional[int] = ..., recovery_epoch: _Optional[int] = ..., node: _Optional[int] = ..., preempted_by: _Optional[int] = ...) -> None: ...

class Seal(_message.Message):
    __slots__ = ("log_id", "by", "lce")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    LCE_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    by: int
    lce: int
    def __init__(self, log_id: _Optional[int] = ..., by: _Optional[int] = ..., lce: _Optional[int] = ...) -> None: ...

class EpochLng(_message.Message):
    __slots__ = ("epoch", "lng")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LNG_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    lng: int
    def __init__(self, epoch: _Optional[int] = ..., lng: _Optional[int] = ...) -> None: ...

class Sealed(_message.Message):
    __slots__ = ("log_id", "by", "node", "lngs", "digest", "preempted_by")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    LNGS_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_BY_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    by: int
    node: int
    lngs: _containers.RepeatedCompositeFieldContainer[EpochLng]
    digest: _containers.RepeatedCompositeFieldContainer[Copy]
    preempted_by: int
    def __init__(self, log_id: _Optional[int] = ..., by: _Optional[int] = ..., node: _Optional[int] = ..., lngs: _Optional[_Iterable[_Union[EpochLng, _Mapping]]] = ..., digest: _Optional[_Iterable[_Union[Copy, _Mapping]]] = ..., preempted_by: _Optional[int] = ...) -> None: ...

class Clean(_message.Message):
    __slots__ = ("log_id", "by", "lce")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    LCE_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    by: int
    lce: int
    def __init__(self, log_id: _Optional[int] = ..., by: _Optional[int] = ..., lce: _Optional[int] = ...) -> None: ...

class Cleaned(_message.Message):
    __slots__ = ("log_id", "by", "node")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    by: int
    node: int
    def __init__(self, log_id: _Optional[int] = ..., by: _Optional[int] = ..., node: _Optional[int] = ...) -> None: ...

class Release(_message.Message):
    __slots__ = ("log_id", "lsn")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn: int
    def __init__(self, log_id: _Optional[int] = ..., lsn: _Optional[int] = ...) -> None: ...

class Trim(_message.Message):
    __slots__ = ("log_id", "lsn")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn: int
    def __init__(self, log_id: _Optional[int] = ..., lsn: _Optional[int] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("store", "stored", "seal", "sealed", "clean", "cleaned", "release", "trim")
    STORE_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    SEAL_FIELD_NUMBER: _ClassVar[int]
    SEALED_FIELD_NUMBER: _ClassVar[int]
    CLEAN_FIELD_NUMBER: _ClassVar[int]
    CLEANED_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    TRIM_FIELD_NUMBER: _ClassVar[int]
    store: Store
    stored: Stored
    seal: Seal
    sealed: Sealed
    clean: Clean
    cleaned: Cleaned
    release: Release
    trim: Trim
    def __init__(self, store: _Optional[_Union[Store, _Mapping]] = ..., stored: _Optional[_Union[Stored, _Mapping]] = ..., seal: _Optional[_Union[Seal, _Mapping]] = ..., sealed: _Optional[_Union[Sealed, _Mapping]] = ..., clean: _Optional[_Union[Clean, _Mapping]] = ..., cleaned: _Optional[_Union[Cleaned, _Mapping]] = ..., release: _Optional[_Union[Release, _Mapping]] = ..., trim: _Optional[_Union[Trim, _Mapping]] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ("sender", "cluster", "messages")
    SENDER_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    sender: int
    cluster: str
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    def __init__(self, sender: _Optional[int] = ..., cluster: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ...) -> None: ...

class AppendRequest(_message.Message):
    __slots__ = ("log_id", "payload")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    payload: bytes
    def __init__(self, log_id: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class AppendReply(_message.Message):
    __slots__ = ("lsn",)
    LSN_FIELD_NUMBER: _ClassVar[int]
    lsn: int
    def __init__(self, lsn: _Optional[int] = ...) -> None: ...

class ReadFrom(_message.Message):
    __slots__ = ("log_id", "lsn", "max_copies")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    MAX_COPIES_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn: int
    max_copies: int
    def __init__(self, log_id: _Optional[int] = ..., lsn: _Optional[int] = ..., max_copies: _Optional[int] = ...) -> None: ...

class ReadReply(_message.Message):
    __slots__ = ("log_id", "node", "copies", "next_lsn", "trim_point")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_LSN_FIELD_NUMBER: _ClassVar[int]
    TRIM_POINT_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    node: int
    copies: _containers.RepeatedCompositeFieldContainer[Copy]
    next_lsn: int
    trim_point: int
    def __init__(self, log_id: _Optional[int] = ..., node: _Optional[int] = ..., copies: _Optional[_Iterable[_Union[Copy, _Mapping]]] = ..., next_lsn: _Optional[int] = ..., trim_point: _Optional[int] = ...) -> None: ...

class LogRef(_message.Message):
    __slots__ = ("log_id",)
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    def __init__(self, log_id: _Optional[int] = ...) -> None: ...

class CreateLogRequest(_message.Message):
    __slots__ = ("log_id", "replication", "nodes")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    replication: int
    nodes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, log_id: _Optional[int] = ..., replication: _Optional[int] = ..., nodes: _Optional[_Iterable[int]] = ...) -> None: ...

class EpochRecordReply(_message.Message):
    __slots__ = ("record", "version", "trim_point")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TRIM_POINT_FIELD_NUMBER: _ClassVar[int]
    record: bytes
    version: int
    trim_point: int
    def __init__(self, record: _Optional[bytes] = ..., version: _Optional[int] = ..., trim_point: _Optional[int] = ...) -> None: ...

class TrimRequest(_message.Message):
    __slots__ = ("log_id", "lsn")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn: int
    def __init__(self, log_id: _Optional[int] = ..., lsn: _Optional[int] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ("members_only",)
    MEMBERS_ONLY_FIELD_NUMBER: _ClassVar[int]
    members_only: bool
    def __init__(self, members_only: _Optional[bool] = ...) -> None: ...

class ControlReply(_message.Message):
    __slots__ = ("node", "address")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    node: int
    address: str
    def __init__(self, node: _Optional[int] = ..., address: _Optional[str] = ...) -> None: ...

class SequencerStatus(_message.Message):
    __slots__ = ("log_id", "state", "epoch", "last_known_good")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_KNOWN_GOOD_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    state: str
    epoch: int
    last_known_good: int
    def __init__(self, log_id: _Optional[int] = ..., state: _Optional[str] = ..., epoch: _Optional[int] = ..., last_known_good: _Optional[int] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ("node", "address")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    node: int
    address: str
    def __init__(self, node: _Optional[int] = ..., address: _Optional[str] = ...) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ("node", "address", "members", "sequencers", "logs", "default_replication")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCERS_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_REPLICATION_FIELD_NUMBER: _ClassVar[int]
    node: int
    address: str
    members: _containers.RepeatedCompositeFieldContainer[Member]
    sequencers: _containers.RepeatedCompositeFieldContainer[SequencerStatus]
    logs: _containers.RepeatedScalarFieldContainer[int]
    default_replication: int
    def __init__(self, node: _Optional[int] = ..., address: _Optional[str] = ..., members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ..., sequencers: _Optional[_Iterable[_Union[SequencerStatus, _Mapping]]] = ..., logs: _Optional[_Iterable[int]] = ..., default_replication: _Optional[int] = ...) -> None: ...

class AppendBatchRequest(_message.Message):
    __slots__ = ("log_id", "payloads", "producer_id", "sequence", "has_if_tail", "if_tail")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    HAS_IF_TAIL_FIELD_NUMBER: _ClassVar[int]
    IF_TAIL_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    payloads: _containers.RepeatedScalarFieldContainer[bytes]
    producer_id: bytes
    sequence: int
    has_if_tail: bool
    if_tail: int
    def __init__(self, log_id: _Optional[int] = ..., payloads: _Optional[_Iterable[bytes]] = ..., producer_id: _Optional[bytes] = ..., sequence: _Optional[int] = ..., has_if_tail: _Optional[bool] = ..., if_tail: _Optional[int] = ...) -> None: ...

class AppendBatchReply(_message.Message):
    __slots__ = ("first_lsn", "count")
    FIRST_LSN_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    first_lsn: int
    count: int
    def __init__(self, first_lsn: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class LogConfig(_message.Message):
    __slots__ = ("name", "log_id", "group", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    log_id: int
    group: str
    attributes: str
    def __init__(self, name: _Optional[str] = ..., log_id: _Optional[int] = ..., group: _Optional[str] = ..., attributes: _Optional[str] = ...) -> None: ...

class GroupConfig(_message.Message):
    __slots__ = ("name", "first_id", "last_id", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    first_id: int
    last_id: int
    attributes: str
    def __init__(self, name: _Optional[str] = ..., first_id: _Optional[int] = ..., last_id: _Optional[int] = ..., attributes: _Optional[str] = ...) -> None: ...

class LogLookup(_message.Message):
    __slots__ = ("log_id", "name")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    name: str
    def __init__(self, log_id: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class ListLogsRequest(_message.Message):
    __slots__ = ("after_id", "limit")
    AFTER_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after_id: int
    limit: int
    def __init__(self, after_id: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class LogConfigs(_message.Message):
    __slots__ = ("logs",)
    LOGS_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[LogConfig]
    def __init__(self, logs: _Optional[_Iterable[_Union[LogConfig, _Mapping]]] = ...) -> None: ...

class GroupConfigs(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupConfig]
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupConfig, _Mapping]]] = ...) -> None: ...

class LsnReply(_message.Message):
    __slots__ = ("lsn",)
    LSN_FIELD_NUMBER: _ClassVar[int]
    lsn: int
    def __init__(self, lsn: _Optional[int] = ...) -> None: ...

class LogIds(_message.Message):
    __slots__ = ("log_ids",)
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, log_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class Bounds(_message.Message):
    __slots__ = ("log_id", "tail_lsn", "sealed", "final_lsn", "trim_point")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    TAIL_LSN_FIELD_NUMBER: _ClassVar[int]
    SEALED_FIELD_NUMBER: _ClassVar[int]
    FINAL_LSN_FIELD_NUMBER: _ClassVar[int]
    TRIM_POINT_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    tail_lsn: int
    sealed: bool
    final_lsn: int
    trim_point: int
    def __init__(self, log_id: _Optional[int] = ..., tail_lsn: _Optional[int] = ..., sealed: _Optional[bool] = ..., final_lsn: _Optional[int] = ..., trim_point: _Optional[int] = ...) -> None: ...

class AppendCountsReply(_message.Message):
    __slots__ = ("records", "payload_bytes")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedScalarFieldContainer[int]
    payload_bytes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, records: _Optional[_Iterable[int]] = ..., payload_bytes: _Optional[_Iterable[int]] = ...) -> None: ...
