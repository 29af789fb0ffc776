"""Transactions (Tephra's design): write pointers, snapshots, visibility, conflict detection,
timeouts, the invalid list and its pruning, and a durable manager that recovers after a crash."""

from seaway.txn._aborted import JUDGED_LOGS_MAX, AbortedJudges, LogJudge
from seaway.txn._api import Transaction, Transactions, TxnApi
from seaway.txn._chain import READS_MAX, Begun, check_reads
from seaway.txn._checks import LOGS_MAX, WAIT_IDS_MAX, check_txn_logs, check_wait, check_write_pointer
from seaway.txn._config import TxnConfig
from seaway.txn._durable import NAMESPACE as STATE_NAMESPACE
from seaway.txn._durable import WAL_LOG
from seaway.txn._idlog import IdView, LiveChanges, LiveCopy
from seaway.txn._invalid import PAGE_IDS_MAX as INVALID_PAGE_IDS_MAX
from seaway.txn._invalid import InvalidChanges, InvalidCopy, InvalidVersion
from seaway.txn._linked import LinkedWrite, check_linked_writes
from seaway.txn._manager import TransactionManager, TxnInfo
from seaway.txn._snapshot import Snapshot, Visibility
from seaway.txn._state import TxnStatus

__all__ = ["INVALID_PAGE_IDS_MAX", "JUDGED_LOGS_MAX", "LOGS_MAX", "READS_MAX", "STATE_NAMESPACE", "WAIT_IDS_MAX",
           "WAL_LOG", "AbortedJudges", "Begun", "IdView", "InvalidChanges", "InvalidCopy", "InvalidVersion",
           "LinkedWrite", "LiveChanges", "LiveCopy", "LogJudge", "Snapshot", "Transaction", "TransactionManager",
           "Transactions", "TxnApi", "TxnConfig", "TxnInfo", "TxnStatus", "Visibility", "check_linked_writes",
           "check_reads", "check_txn_logs", "check_wait", "check_write_pointer"]
