"""The child side of the pruning crash test: list aborted transactions in their log, then die for
real before the manager logs their removal from the invalid list.

Run as ``python -m seaway.testing._prune_crash DATA_DIR``. The store at ``DATA_DIR`` holds
transactions that wrote to log ``PRUNE_LOG`` and were aborted (set up by the parent, with
``settle_s`` 0 and a timeout of ``TIMEOUT_S``). A transaction manager over the store's logs, with
a clock past their expiry and a :class:`~seaway.testing.CrashingMeta` armed to kill this process
with SIGKILL just after its first metadata batch applies, runs a pruning pass: that batch lists
them as aborted in the log (the step before the ``Prune`` edit), so the process dies between the
two. The process never exits on its own: an exit code of 3 means the pass ended without reaching
the point.
"""

from __future__ import annotations

import sys

import seaway
from seaway.testing._clock import FakeClock
from seaway.testing._crash_points import CrashingMeta
from seaway.txn import TransactionManager, TxnConfig

PRUNE_LOG = "prune-crash"
TIMEOUT_S = 1.0
TXN = TxnConfig(settle_s=0, prune_interval_s=3600, tick_s=3600)
CONFIG = seaway.SeawayConfig(retention=None, txn=TXN)
NOT_CRASHED = 3


def main(data_dir: str) -> None:
    with seaway.open(data_dir, CONFIG) as sw:
        clock = FakeClock(sw.clock.now_ms() + int(TIMEOUT_S * 1000) + 1000)  # past every expiry
        # The store's own manager is idle (no pass runs): this one recovers the same log, as the
        # store's would after a restart, and runs the pass.
        manager = TransactionManager(sw.own_logs, CrashingMeta(sw.meta, 1, applied=True, kill=True), clock, TXN)
        manager.run_pruning()
    sys.exit(NOT_CRASHED)


if __name__ == "__main__":
    main(sys.argv[1])
