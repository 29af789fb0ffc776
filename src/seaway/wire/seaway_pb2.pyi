from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GapType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GAP_UNSPECIFIED: _ClassVar[GapType]
    BRIDGE: _ClassVar[GapType]
    HOLE: _ClassVar[GapType]
    TRIM: _ClassVar[GapType]
    DATALOSS: _ClassVar[GapType]
    SEALED: _ClassVar[GapType]

class TxnOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TXN_OUTCOME_UNSPECIFIED: _ClassVar[TxnOutcome]
    TXN_IN_PROGRESS: _ClassVar[TxnOutcome]
    TXN_COMMITTED: _ClassVar[TxnOutcome]
    TXN_ABORTED: _ClassVar[TxnOutcome]
    TXN_TIMED_OUT: _ClassVar[TxnOutcome]
    TXN_UNKNOWN: _ClassVar[TxnOutcome]
GAP_UNSPECIFIED: GapType
BRIDGE: GapType
HOLE: GapType
TRIM: GapType
DATALOSS: GapType
SEALED: GapType
TXN_OUTCOME_UNSPECIFIED: TxnOutcome
TXN_IN_PROGRESS: TxnOutcome
TXN_COMMITTED: TxnOutcome
TXN_ABORTED: TxnOutcome
TXN_TIMED_OUT: TxnOutcome
TXN_UNKNOWN: TxnOutcome

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PageRequest(_message.Message):
    __slots__ = ("after",)
    AFTER_FIELD_NUMBER: _ClassVar[int]
    after: bytes
    def __init__(self, after: _Optional[bytes] = ...) -> None: ...

class AppendCountsRequest(_message.Message):
    __slots__ = ("log_ids",)
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, log_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class AppendCountsReply(_message.Message):
    __slots__ = ("records", "payload_bytes")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedScalarFieldContainer[int]
    payload_bytes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, records: _Optional[_Iterable[int]] = ..., payload_bytes: _Optional[_Iterable[int]] = ...) -> None: ...

class LogBoundsRequest(_message.Message):
    __slots__ = ("log_ids",)
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, log_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class LogBoundsReply(_message.Message):
    __slots__ = ("logs",)
    LOGS_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[LogBoundsItem]
    def __init__(self, logs: _Optional[_Iterable[_Union[LogBoundsItem, _Mapping]]] = ...) -> None: ...

class CountRecordsRequest(_message.Message):
    __slots__ = ("ranges",)
    RANGES_FIELD_NUMBER: _ClassVar[int]
    ranges: _containers.RepeatedCompositeFieldContainer[CountRange]
    def __init__(self, ranges: _Optional[_Iterable[_Union[CountRange, _Mapping]]] = ...) -> None: ...

class CountRange(_message.Message):
    __slots__ = ("log_id", "lsn_from", "lsn_until")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FROM_FIELD_NUMBER: _ClassVar[int]
    LSN_UNTIL_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn_from: int
    lsn_until: int
    def __init__(self, log_id: _Optional[int] = ..., lsn_from: _Optional[int] = ..., lsn_until: _Optional[int] = ...) -> None: ...

class CountRecordsReply(_message.Message):
    __slots__ = ("logs",)
    LOGS_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[CountItem]
    def __init__(self, logs: _Optional[_Iterable[_Union[CountItem, _Mapping]]] = ...) -> None: ...

class CountItem(_message.Message):
    __slots__ = ("log_id", "records")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    records: int
    def __init__(self, log_id: _Optional[int] = ..., records: _Optional[int] = ...) -> None: ...

class LogBoundsItem(_message.Message):
    __slots__ = ("log_id", "tail_lsn", "trim_point", "final_lsn")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    TAIL_LSN_FIELD_NUMBER: _ClassVar[int]
    TRIM_POINT_FIELD_NUMBER: _ClassVar[int]
    FINAL_LSN_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    tail_lsn: int
    trim_point: int
    final_lsn: int
    def __init__(self, log_id: _Optional[int] = ..., tail_lsn: _Optional[int] = ..., trim_point: _Optional[int] = ..., final_lsn: _Optional[int] = ...) -> None: ...

class HealthReply(_message.Message):
    __slots__ = ("status", "version", "time_ms")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    status: str
    version: str
    time_ms: int
    def __init__(self, status: _Optional[str] = ..., version: _Optional[str] = ..., time_ms: _Optional[int] = ...) -> None: ...

class Attributes(_message.Message):
    __slots__ = ("backlog_s", "payload_bytes_max", "durability")
    BACKLOG_S_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_MAX_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    backlog_s: float
    payload_bytes_max: int
    durability: str
    def __init__(self, backlog_s: _Optional[float] = ..., payload_bytes_max: _Optional[int] = ..., durability: _Optional[str] = ...) -> None: ...

class CreateLogRequest(_message.Message):
    __slots__ = ("name", "log_id", "group", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    log_id: int
    group: str
    attributes: Attributes
    def __init__(self, name: _Optional[str] = ..., log_id: _Optional[int] = ..., group: _Optional[str] = ..., attributes: _Optional[_Union[Attributes, _Mapping]] = ...) -> None: ...

class CreateGroupRequest(_message.Message):
    __slots__ = ("name", "first_id", "last_id", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    first_id: int
    last_id: int
    attributes: Attributes
    def __init__(self, name: _Optional[str] = ..., first_id: _Optional[int] = ..., last_id: _Optional[int] = ..., attributes: _Optional[_Union[Attributes, _Mapping]] = ...) -> None: ...

class GroupInfo(_message.Message):
    __slots__ = ("name", "first_id", "last_id", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    first_id: int
    last_id: int
    attributes: Attributes
    def __init__(self, name: _Optional[str] = ..., first_id: _Optional[int] = ..., last_id: _Optional[int] = ..., attributes: _Optional[_Union[Attributes, _Mapping]] = ...) -> None: ...

class GroupList(_message.Message):
    __slots__ = ("groups", "next")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupInfo]
    next: bytes
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupInfo, _Mapping]]] = ..., next: _Optional[bytes] = ...) -> None: ...

class PartitionInfo(_message.Message):
    __slots__ = ("partition_id", "created_ms", "size_bytes", "log_ids")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    created_ms: int
    size_bytes: int
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition_id: _Optional[int] = ..., created_ms: _Optional[int] = ..., size_bytes: _Optional[int] = ..., log_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class PartitionList(_message.Message):
    __slots__ = ("partitions", "next")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionInfo]
    next: bytes
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionInfo, _Mapping]]] = ..., next: _Optional[bytes] = ...) -> None: ...

class PartitionIds(_message.Message):
    __slots__ = ("partition_ids",)
    PARTITION_IDS_FIELD_NUMBER: _ClassVar[int]
    partition_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class LogRef(_message.Message):
    __slots__ = ("name", "log_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    log_id: int
    def __init__(self, name: _Optional[str] = ..., log_id: _Optional[int] = ...) -> None: ...

class LogInfo(_message.Message):
    __slots__ = ("name", "log_id", "group", "attributes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    log_id: int
    group: str
    attributes: Attributes
    def __init__(self, name: _Optional[str] = ..., log_id: _Optional[int] = ..., group: _Optional[str] = ..., attributes: _Optional[_Union[Attributes, _Mapping]] = ...) -> None: ...

class LogList(_message.Message):
    __slots__ = ("logs", "next")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[LogInfo]
    next: bytes
    def __init__(self, logs: _Optional[_Iterable[_Union[LogInfo, _Mapping]]] = ..., next: _Optional[bytes] = ...) -> None: ...

class AppendRequest(_message.Message):
    __slots__ = ("log_id", "payloads", "producer_id", "sequence", "if_tail")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    IF_TAIL_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    payloads: _containers.RepeatedScalarFieldContainer[bytes]
    producer_id: bytes
    sequence: int
    if_tail: int
    def __init__(self, log_id: _Optional[int] = ..., payloads: _Optional[_Iterable[bytes]] = ..., producer_id: _Optional[bytes] = ..., sequence: _Optional[int] = ..., if_tail: _Optional[int] = ...) -> None: ...

class AppendReply(_message.Message):
    __slots__ = ("first_lsn", "count")
    FIRST_LSN_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    first_lsn: int
    count: int
    def __init__(self, first_lsn: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class AppendManyRequest(_message.Message):
    __slots__ = ("batches",)
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    batches: _containers.RepeatedCompositeFieldContainer[AppendRequest]
    def __init__(self, batches: _Optional[_Iterable[_Union[AppendRequest, _Mapping]]] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "message", "retriable")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRIABLE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    retriable: bool
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., retriable: _Optional[bool] = ...) -> None: ...

class AppendResult(_message.Message):
    __slots__ = ("appended", "error")
    APPENDED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    appended: AppendReply
    error: Error
    def __init__(self, appended: _Optional[_Union[AppendReply, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class AppendManyReply(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AppendResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AppendResult, _Mapping]]] = ...) -> None: ...

class TrimRequest(_message.Message):
    __slots__ = ("log_id", "lsn")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn: int
    def __init__(self, log_id: _Optional[int] = ..., lsn: _Optional[int] = ...) -> None: ...

class LogState(_message.Message):
    __slots__ = ("tail_lsn", "trim_point", "is_empty", "data_size", "final_lsn")
    TAIL_LSN_FIELD_NUMBER: _ClassVar[int]
    TRIM_POINT_FIELD_NUMBER: _ClassVar[int]
    IS_EMPTY_FIELD_NUMBER: _ClassVar[int]
    DATA_SIZE_FIELD_NUMBER: _ClassVar[int]
    FINAL_LSN_FIELD_NUMBER: _ClassVar[int]
    tail_lsn: int
    trim_point: int
    is_empty: bool
    data_size: int
    final_lsn: int
    def __init__(self, tail_lsn: _Optional[int] = ..., trim_point: _Optional[int] = ..., is_empty: _Optional[bool] = ..., data_size: _Optional[int] = ..., final_lsn: _Optional[int] = ...) -> None: ...

class FindTimeRequest(_message.Message):
    __slots__ = ("log_id", "timestamp_ms")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    timestamp_ms: int
    def __init__(self, log_id: _Optional[int] = ..., timestamp_ms: _Optional[int] = ...) -> None: ...

class LsnReply(_message.Message):
    __slots__ = ("lsn",)
    LSN_FIELD_NUMBER: _ClassVar[int]
    lsn: int
    def __init__(self, lsn: _Optional[int] = ...) -> None: ...

class RecordRun(_message.Message):
    __slots__ = ("first_lsn", "timestamp_ms", "payloads")
    FIRST_LSN_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    first_lsn: int
    timestamp_ms: int
    payloads: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, first_lsn: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., payloads: _Optional[_Iterable[bytes]] = ...) -> None: ...

class Gap(_message.Message):
    __slots__ = ("type", "lsn_lo", "lsn_hi")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LSN_LO_FIELD_NUMBER: _ClassVar[int]
    LSN_HI_FIELD_NUMBER: _ClassVar[int]
    type: GapType
    lsn_lo: int
    lsn_hi: int
    def __init__(self, type: _Optional[_Union[GapType, str]] = ..., lsn_lo: _Optional[int] = ..., lsn_hi: _Optional[int] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("records", "gap")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    records: RecordRun
    gap: Gap
    def __init__(self, records: _Optional[_Union[RecordRun, _Mapping]] = ..., gap: _Optional[_Union[Gap, _Mapping]] = ...) -> None: ...

class ReadControls(_message.Message):
    __slots__ = ("controls",)
    CONTROLS_FIELD_NUMBER: _ClassVar[int]
    controls: _containers.RepeatedCompositeFieldContainer[ReadControl]
    def __init__(self, controls: _Optional[_Iterable[_Union[ReadControl, _Mapping]]] = ...) -> None: ...

class ReadControl(_message.Message):
    __slots__ = ("start", "stop", "grant")
    START_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    start: ReadStart
    stop: ReadStop
    grant: ReadGrant
    def __init__(self, start: _Optional[_Union[ReadStart, _Mapping]] = ..., stop: _Optional[_Union[ReadStop, _Mapping]] = ..., grant: _Optional[_Union[ReadGrant, _Mapping]] = ...) -> None: ...

class ReadStart(_message.Message):
    __slots__ = ("log_id", "lsn_from", "lsn_until", "tag")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    LSN_FROM_FIELD_NUMBER: _ClassVar[int]
    LSN_UNTIL_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    lsn_from: int
    lsn_until: int
    tag: int
    def __init__(self, log_id: _Optional[int] = ..., lsn_from: _Optional[int] = ..., lsn_until: _Optional[int] = ..., tag: _Optional[int] = ...) -> None: ...

class ReadStop(_message.Message):
    __slots__ = ("log_id",)
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    def __init__(self, log_id: _Optional[int] = ...) -> None: ...

class ReadGrant(_message.Message):
    __slots__ = ("items", "bytes")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    items: int
    bytes: int
    def __init__(self, items: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class ReadItems(_message.Message):
    __slots__ = ("log_id", "runs", "tag", "ended", "error")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    tag: int
    ended: bool
    error: Error
    def __init__(self, log_id: _Optional[int] = ..., runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., tag: _Optional[int] = ..., ended: _Optional[bool] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class ReadReply(_message.Message):
    __slots__ = ("logs",)
    LOGS_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[ReadItems]
    def __init__(self, logs: _Optional[_Iterable[_Union[ReadItems, _Mapping]]] = ...) -> None: ...

class MetaKey(_message.Message):
    __slots__ = ("namespace", "key")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: bytes
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[bytes] = ...) -> None: ...

class MetaGetReply(_message.Message):
    __slots__ = ("found", "value", "version")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value: bytes
    version: int
    def __init__(self, found: _Optional[bool] = ..., value: _Optional[bytes] = ..., version: _Optional[int] = ...) -> None: ...

class MetaScanRequest(_message.Message):
    __slots__ = ("namespace", "prefix", "start", "end", "limit")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    prefix: bytes
    start: bytes
    end: bytes
    limit: int
    def __init__(self, namespace: _Optional[str] = ..., prefix: _Optional[bytes] = ..., start: _Optional[bytes] = ..., end: _Optional[bytes] = ..., limit: _Optional[int] = ...) -> None: ...

class MetaEntry(_message.Message):
    __slots__ = ("key", "value", "version")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    value: bytes
    version: int
    def __init__(self, key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., version: _Optional[int] = ...) -> None: ...

class MetaScanReply(_message.Message):
    __slots__ = ("entries", "more")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[MetaEntry]
    more: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[MetaEntry, _Mapping]]] = ..., more: _Optional[bool] = ...) -> None: ...

class MetaPutOp(_message.Message):
    __slots__ = ("namespace", "key", "value")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: bytes
    value: bytes
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...

class MetaRange(_message.Message):
    __slots__ = ("namespace", "start", "end")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    start: bytes
    end: bytes
    def __init__(self, namespace: _Optional[str] = ..., start: _Optional[bytes] = ..., end: _Optional[bytes] = ...) -> None: ...

class MetaOp(_message.Message):
    __slots__ = ("put", "delete", "delete_range")
    PUT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    DELETE_RANGE_FIELD_NUMBER: _ClassVar[int]
    put: MetaPutOp
    delete: MetaKey
    delete_range: MetaRange
    def __init__(self, put: _Optional[_Union[MetaPutOp, _Mapping]] = ..., delete: _Optional[_Union[MetaKey, _Mapping]] = ..., delete_range: _Optional[_Union[MetaRange, _Mapping]] = ...) -> None: ...

class MetaCondition(_message.Message):
    __slots__ = ("namespace", "key", "version", "value")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: bytes
    version: int
    value: bytes
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[bytes] = ..., version: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...

class MetaBatch(_message.Message):
    __slots__ = ("conditions", "ops", "ledger", "new_logs")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    LEDGER_FIELD_NUMBER: _ClassVar[int]
    NEW_LOGS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[MetaCondition]
    ops: _containers.RepeatedCompositeFieldContainer[MetaOp]
    ledger: bytes
    new_logs: _containers.RepeatedCompositeFieldContainer[MetaNewLog]
    def __init__(self, conditions: _Optional[_Iterable[_Union[MetaCondition, _Mapping]]] = ..., ops: _Optional[_Iterable[_Union[MetaOp, _Mapping]]] = ..., ledger: _Optional[bytes] = ..., new_logs: _Optional[_Iterable[_Union[MetaNewLog, _Mapping]]] = ...) -> None: ...

class MetaNewLog(_message.Message):
    __slots__ = ("name", "log_id", "group")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    name: str
    log_id: int
    group: str
    def __init__(self, name: _Optional[str] = ..., log_id: _Optional[int] = ..., group: _Optional[str] = ...) -> None: ...

class MetaConditionFailed(_message.Message):
    __slots__ = ("namespace", "key", "version", "message")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: bytes
    version: int
    message: str
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[bytes] = ..., version: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class MetaCommitReply(_message.Message):
    __slots__ = ("revision", "failed")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    revision: int
    failed: MetaConditionFailed
    def __init__(self, revision: _Optional[int] = ..., failed: _Optional[_Union[MetaConditionFailed, _Mapping]] = ...) -> None: ...

class MetaRevisionReply(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class LedgerBoundsReply(_message.Message):
    __slots__ = ("tail", "head")
    TAIL_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    tail: int
    head: int
    def __init__(self, tail: _Optional[int] = ..., head: _Optional[int] = ...) -> None: ...

class LedgerReadRequest(_message.Message):
    __slots__ = ("index_from", "limit")
    INDEX_FROM_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    index_from: int
    limit: int
    def __init__(self, index_from: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class LedgerEntry(_message.Message):
    __slots__ = ("index", "time_ms", "change")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    index: int
    time_ms: int
    change: bytes
    def __init__(self, index: _Optional[int] = ..., time_ms: _Optional[int] = ..., change: _Optional[bytes] = ...) -> None: ...

class LedgerReadReply(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[LedgerEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[LedgerEntry, _Mapping]]] = ...) -> None: ...

class LedgerAppendRequest(_message.Message):
    __slots__ = ("change",)
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    change: bytes
    def __init__(self, change: _Optional[bytes] = ...) -> None: ...

class LedgerAppendReply(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class LedgerPruneRequest(_message.Message):
    __slots__ = ("through",)
    THROUGH_FIELD_NUMBER: _ClassVar[int]
    through: int
    def __init__(self, through: _Optional[int] = ...) -> None: ...

class LedgerFloorRequest(_message.Message):
    __slots__ = ("name", "index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    index: int
    def __init__(self, name: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class NotifySetRequest(_message.Message):
    __slots__ = ("config_json",)
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    config_json: str
    def __init__(self, config_json: _Optional[str] = ...) -> None: ...

class NotifyName(_message.Message):
    __slots__ = ("name", "expect_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECT_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    expect_version: int
    def __init__(self, name: _Optional[str] = ..., expect_version: _Optional[int] = ...) -> None: ...

class NotifyConfigInfo(_message.Message):
    __slots__ = ("config_json", "version", "checkpoint", "checkpoint_error")
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ERROR_FIELD_NUMBER: _ClassVar[int]
    config_json: str
    version: int
    checkpoint: bytes
    checkpoint_error: str
    def __init__(self, config_json: _Optional[str] = ..., version: _Optional[int] = ..., checkpoint: _Optional[bytes] = ..., checkpoint_error: _Optional[str] = ...) -> None: ...

class NotifyListReply(_message.Message):
    __slots__ = ("configs",)
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    configs: _containers.RepeatedCompositeFieldContainer[NotifyConfigInfo]
    def __init__(self, configs: _Optional[_Iterable[_Union[NotifyConfigInfo, _Mapping]]] = ...) -> None: ...

class InvalidKnown(_message.Message):
    __slots__ = ("epoch", "version")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    version: int
    def __init__(self, epoch: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class InvalidChanges(_message.Message):
    __slots__ = ("epoch", "version", "reset", "fetch", "added", "removed")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RESET_FIELD_NUMBER: _ClassVar[int]
    FETCH_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    version: int
    reset: bool
    fetch: bool
    added: _containers.RepeatedScalarFieldContainer[int]
    removed: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, epoch: _Optional[int] = ..., version: _Optional[int] = ..., reset: _Optional[bool] = ..., fetch: _Optional[bool] = ..., added: _Optional[_Iterable[int]] = ..., removed: _Optional[_Iterable[int]] = ...) -> None: ...

class LiveChanges(_message.Message):
    __slots__ = ("epoch", "version", "since", "reset", "ids", "added")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    RESET_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    version: int
    since: int
    reset: bool
    ids: _containers.RepeatedScalarFieldContainer[int]
    added: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, epoch: _Optional[int] = ..., version: _Optional[int] = ..., since: _Optional[int] = ..., reset: _Optional[bool] = ..., ids: _Optional[_Iterable[int]] = ..., added: _Optional[_Iterable[bool]] = ...) -> None: ...

class TxnBeginRequest(_message.Message):
    __slots__ = ("timeout_s", "invalid_known", "log_ids", "live_known", "reads")
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    INVALID_KNOWN_FIELD_NUMBER: _ClassVar[int]
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    LIVE_KNOWN_FIELD_NUMBER: _ClassVar[int]
    READS_FIELD_NUMBER: _ClassVar[int]
    timeout_s: float
    invalid_known: InvalidKnown
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    live_known: InvalidKnown
    reads: _containers.RepeatedCompositeFieldContainer[MetaKey]
    def __init__(self, timeout_s: _Optional[float] = ..., invalid_known: _Optional[_Union[InvalidKnown, _Mapping]] = ..., log_ids: _Optional[_Iterable[int]] = ..., live_known: _Optional[_Union[InvalidKnown, _Mapping]] = ..., reads: _Optional[_Iterable[_Union[MetaKey, _Mapping]]] = ...) -> None: ...

class TxnBeginReply(_message.Message):
    __slots__ = ("snapshot", "default_timeout_s", "invalid", "live", "reads", "unread")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    INVALID_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    READS_FIELD_NUMBER: _ClassVar[int]
    UNREAD_FIELD_NUMBER: _ClassVar[int]
    snapshot: bytes
    default_timeout_s: float
    invalid: InvalidChanges
    live: LiveChanges
    reads: _containers.RepeatedCompositeFieldContainer[MetaGetReply]
    unread: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, snapshot: _Optional[bytes] = ..., default_timeout_s: _Optional[float] = ..., invalid: _Optional[_Union[InvalidChanges, _Mapping]] = ..., live: _Optional[_Union[LiveChanges, _Mapping]] = ..., reads: _Optional[_Iterable[_Union[MetaGetReply, _Mapping]]] = ..., unread: _Optional[_Iterable[int]] = ...) -> None: ...

class TxnSnapshotRequest(_message.Message):
    __slots__ = ("invalid_known", "live_known")
    INVALID_KNOWN_FIELD_NUMBER: _ClassVar[int]
    LIVE_KNOWN_FIELD_NUMBER: _ClassVar[int]
    invalid_known: InvalidKnown
    live_known: InvalidKnown
    def __init__(self, invalid_known: _Optional[_Union[InvalidKnown, _Mapping]] = ..., live_known: _Optional[_Union[InvalidKnown, _Mapping]] = ...) -> None: ...

class TxnInvalidRequest(_message.Message):
    __slots__ = ("after", "limit")
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after: int
    limit: int
    def __init__(self, after: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class TxnInvalidReply(_message.Message):
    __slots__ = ("ids", "epoch", "version", "more")
    IDS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    epoch: int
    version: int
    more: bool
    def __init__(self, ids: _Optional[_Iterable[int]] = ..., epoch: _Optional[int] = ..., version: _Optional[int] = ..., more: _Optional[bool] = ...) -> None: ...

class TxnRef(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class TxnRegisterRequest(_message.Message):
    __slots__ = ("id", "log_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    id: int
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[int] = ..., log_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class TxnWrite(_message.Message):
    __slots__ = ("namespace", "key", "value")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: bytes
    value: bytes
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...

class TxnCommitRequest(_message.Message):
    __slots__ = ("id", "conflicts", "writes")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    id: int
    conflicts: _containers.RepeatedScalarFieldContainer[bytes]
    writes: _containers.RepeatedCompositeFieldContainer[TxnWrite]
    def __init__(self, id: _Optional[int] = ..., conflicts: _Optional[_Iterable[bytes]] = ..., writes: _Optional[_Iterable[_Union[TxnWrite, _Mapping]]] = ...) -> None: ...

class LsnSlot(_message.Message):
    __slots__ = ("batch", "record", "offset", "hex")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    HEX_FIELD_NUMBER: _ClassVar[int]
    batch: int
    record: int
    offset: int
    hex: bool
    def __init__(self, batch: _Optional[int] = ..., record: _Optional[int] = ..., offset: _Optional[int] = ..., hex: _Optional[bool] = ...) -> None: ...

class LinkedSlot(_message.Message):
    __slots__ = ("payload", "slot")
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    payload: int
    slot: LsnSlot
    def __init__(self, payload: _Optional[int] = ..., slot: _Optional[_Union[LsnSlot, _Mapping]] = ...) -> None: ...

class LinkedBatch(_message.Message):
    __slots__ = ("log_id", "payloads", "slots")
    LOG_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    log_id: int
    payloads: _containers.RepeatedScalarFieldContainer[bytes]
    slots: _containers.RepeatedCompositeFieldContainer[LinkedSlot]
    def __init__(self, log_id: _Optional[int] = ..., payloads: _Optional[_Iterable[bytes]] = ..., slots: _Optional[_Iterable[_Union[LinkedSlot, _Mapping]]] = ...) -> None: ...

class LinkedWrite(_message.Message):
    __slots__ = ("namespace", "key", "value", "key_slots", "value_slots")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    KEY_SLOTS_FIELD_NUMBER: _ClassVar[int]
    VALUE_SLOTS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: bytes
    value: bytes
    key_slots: _containers.RepeatedCompositeFieldContainer[LsnSlot]
    value_slots: _containers.RepeatedCompositeFieldContainer[LsnSlot]
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., key_slots: _Optional[_Iterable[_Union[LsnSlot, _Mapping]]] = ..., value_slots: _Optional[_Iterable[_Union[LsnSlot, _Mapping]]] = ...) -> None: ...

class TxnAppendCommitRequest(_message.Message):
    __slots__ = ("id", "batches", "conflicts", "writes", "linked_writes")
    ID_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    LINKED_WRITES_FIELD_NUMBER: _ClassVar[int]
    id: int
    batches: _containers.RepeatedCompositeFieldContainer[LinkedBatch]
    conflicts: _containers.RepeatedScalarFieldContainer[bytes]
    writes: _containers.RepeatedCompositeFieldContainer[TxnWrite]
    linked_writes: _containers.RepeatedCompositeFieldContainer[LinkedWrite]
    def __init__(self, id: _Optional[int] = ..., batches: _Optional[_Iterable[_Union[LinkedBatch, _Mapping]]] = ..., conflicts: _Optional[_Iterable[bytes]] = ..., writes: _Optional[_Iterable[_Union[TxnWrite, _Mapping]]] = ..., linked_writes: _Optional[_Iterable[_Union[LinkedWrite, _Mapping]]] = ...) -> None: ...

class TxnAppendCommitReply(_message.Message):
    __slots__ = ("committed", "results")
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    committed: bool
    results: _containers.RepeatedCompositeFieldContainer[AppendResult]
    def __init__(self, committed: _Optional[bool] = ..., results: _Optional[_Iterable[_Union[AppendResult, _Mapping]]] = ...) -> None: ...

class TxnCommitBeginRequest(_message.Message):
    __slots__ = ("commit", "begin")
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    commit: TxnCommitRequest
    begin: TxnBeginRequest
    def __init__(self, commit: _Optional[_Union[TxnCommitRequest, _Mapping]] = ..., begin: _Optional[_Union[TxnBeginRequest, _Mapping]] = ...) -> None: ...

class TxnCommitBeginReply(_message.Message):
    __slots__ = ("begun", "begin_error")
    BEGUN_FIELD_NUMBER: _ClassVar[int]
    BEGIN_ERROR_FIELD_NUMBER: _ClassVar[int]
    begun: TxnBeginReply
    begin_error: Error
    def __init__(self, begun: _Optional[_Union[TxnBeginReply, _Mapping]] = ..., begin_error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class TxnCommitAllRequest(_message.Message):
    __slots__ = ("ids", "conflicts", "writes")
    IDS_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    conflicts: _containers.RepeatedScalarFieldContainer[bytes]
    writes: _containers.RepeatedCompositeFieldContainer[TxnWrite]
    def __init__(self, ids: _Optional[_Iterable[int]] = ..., conflicts: _Optional[_Iterable[bytes]] = ..., writes: _Optional[_Iterable[_Union[TxnWrite, _Mapping]]] = ...) -> None: ...

class TxnStatusReply(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: TxnOutcome
    def __init__(self, status: _Optional[_Union[TxnOutcome, str]] = ...) -> None: ...

class TxnWaitEndedRequest(_message.Message):
    __slots__ = ("ids", "timeout_s")
    IDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    timeout_s: float
    def __init__(self, ids: _Optional[_Iterable[int]] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class TxnWaitEndedReply(_message.Message):
    __slots__ = ("ended",)
    ENDED_FIELD_NUMBER: _ClassVar[int]
    ended: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ended: _Optional[_Iterable[int]] = ...) -> None: ...

class TxnSnapshotReply(_message.Message):
    __slots__ = ("snapshot", "default_timeout_s", "invalid", "live")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    INVALID_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    snapshot: bytes
    default_timeout_s: float
    invalid: InvalidChanges
    live: LiveChanges
    def __init__(self, snapshot: _Optional[bytes] = ..., default_timeout_s: _Optional[float] = ..., invalid: _Optional[_Union[InvalidChanges, _Mapping]] = ..., live: _Optional[_Union[LiveChanges, _Mapping]] = ...) -> None: ...

class TxnInfo(_message.Message):
    __slots__ = ("id", "status", "began_ms", "expiry_ms", "log_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BEGAN_MS_FIELD_NUMBER: _ClassVar[int]
    EXPIRY_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_IDS_FIELD_NUMBER: _ClassVar[int]
    id: int
    status: TxnOutcome
    began_ms: int
    expiry_ms: int
    log_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[int] = ..., status: _Optional[_Union[TxnOutcome, str]] = ..., began_ms: _Optional[int] = ..., expiry_ms: _Optional[int] = ..., log_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class TxnListReply(_message.Message):
    __slots__ = ("transactions", "next")
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    transactions: _containers.RepeatedCompositeFieldContainer[TxnInfo]
    next: bytes
    def __init__(self, transactions: _Optional[_Iterable[_Union[TxnInfo, _Mapping]]] = ..., next: _Optional[bytes] = ...) -> None: ...

class MetaCommitManyRequest(_message.Message):
    __slots__ = ("batches",)
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    batches: _containers.RepeatedCompositeFieldContainer[MetaBatch]
    def __init__(self, batches: _Optional[_Iterable[_Union[MetaBatch, _Mapping]]] = ...) -> None: ...

class MetaCommitResult(_message.Message):
    __slots__ = ("reply", "error")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    reply: MetaCommitReply
    error: Error
    def __init__(self, reply: _Optional[_Union[MetaCommitReply, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class MetaCommitManyReply(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[MetaCommitResult]
    def __init__(self, results: _Optional[_Iterable[_Union[MetaCommitResult, _Mapping]]] = ...) -> None: ...

class TxnBeginManyRequest(_message.Message):
    __slots__ = ("begins",)
    BEGINS_FIELD_NUMBER: _ClassVar[int]
    begins: _containers.RepeatedCompositeFieldContainer[TxnBeginRequest]
    def __init__(self, begins: _Optional[_Iterable[_Union[TxnBeginRequest, _Mapping]]] = ...) -> None: ...

class TxnBeginResult(_message.Message):
    __slots__ = ("begun", "error")
    BEGUN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    begun: TxnBeginReply
    error: Error
    def __init__(self, begun: _Optional[_Union[TxnBeginReply, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class TxnBeginManyReply(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[TxnBeginResult]
    def __init__(self, results: _Optional[_Iterable[_Union[TxnBeginResult, _Mapping]]] = ...) -> None: ...

class TxnCommitManyRequest(_message.Message):
    __slots__ = ("commits",)
    COMMITS_FIELD_NUMBER: _ClassVar[int]
    commits: _containers.RepeatedCompositeFieldContainer[TxnCommitRequest]
    def __init__(self, commits: _Optional[_Iterable[_Union[TxnCommitRequest, _Mapping]]] = ...) -> None: ...

class TxnCommitResult(_message.Message):
    __slots__ = ("committed", "error")
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    committed: Empty
    error: Error
    def __init__(self, committed: _Optional[_Union[Empty, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class TxnCommitManyReply(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[TxnCommitResult]
    def __init__(self, results: _Optional[_Iterable[_Union[TxnCommitResult, _Mapping]]] = ...) -> None: ...
