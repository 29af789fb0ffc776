"""Seaway's wire protocol: gRPC with protobuf (``seaway.proto``), and pure conversions to and from it.

``seaway_pb2`` and ``seaway_pb2_grpc`` are generated from ``seaway.proto`` by ``make proto``.
"""

from seaway.wire import seaway_pb2, seaway_pb2_grpc
from seaway.wire._codec import (
    CODE_KEY,
    RETRIABLE_KEY,
    TOKEN_KEY,
    add_items,
    change_from_msg,
    error_from_msg,
    error_from_status,
    error_metadata,
    error_to_msg,
    items_from_msg,
    items_to_msg,
    ledger_entry_from_msg,
    ledger_entry_to_msg,
    log_info_from_msg,
    log_info_to_msg,
    meta_batch_from_msg,
    meta_batch_to_msg,
    overrides_from_msg,
    overrides_to_msg,
    status_of,
)
from seaway.wire._txn import (
    txn_info_from_msg,
    txn_info_to_msg,
    txn_status_from_msg,
    txn_status_to_msg,
    txn_writes_from_msg,
    txn_writes_to_msg,
)

__all__ = [
    "CODE_KEY",
    "RETRIABLE_KEY",
    "TOKEN_KEY",
    "add_items",
    "change_from_msg",
    "error_from_msg",
    "error_from_status",
    "error_metadata",
    "error_to_msg",
    "items_from_msg",
    "items_to_msg",
    "ledger_entry_from_msg",
    "ledger_entry_to_msg",
    "log_info_from_msg",
    "log_info_to_msg",
    "meta_batch_from_msg",
    "meta_batch_to_msg",
    "overrides_from_msg",
    "overrides_to_msg",
    "seaway_pb2",
    "seaway_pb2_grpc",
    "status_of",
    "txn_info_from_msg",
    "txn_info_to_msg",
    "txn_status_from_msg",
    "txn_status_to_msg",
    "txn_writes_from_msg",
    "txn_writes_to_msg",
]
