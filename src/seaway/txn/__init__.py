"""Transactions (Tephra's design): write pointers, snapshots, visibility, conflict detection,
timeouts, the invalid list and its pruning, and a durable manager that recovers after a crash."""

from seaway.txn._api import Transaction, Transactions, TxnApi
from seaway.txn._manager import TransactionManager, TxnConfig, TxnInfo, check_write_pointer
from seaway.txn._snapshot import Snapshot, Visibility
from seaway.txn._state import TxnStatus

__all__ = ["Snapshot", "Transaction", "TransactionManager", "Transactions", "TxnApi", "TxnConfig", "TxnInfo",
           "TxnStatus", "Visibility", "check_write_pointer"]
