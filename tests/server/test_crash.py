"""The server, killed with SIGKILL while three client processes append, restarted: every acknowledged
record is present exactly once, and no record at all is stored twice (the clients retry through the
outage with idempotent appends)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import seaway
from seaway import Record
from seaway.server import ServerProcess
from seaway.testing._crash import payload

CLIENTS = 3
KILLS = int(os.environ.get("SEAWAY_SERVER_KILLS", "5"))


def _acks(path: Path) -> list[tuple[int, int, int, int]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(map(int, line.split())) for line in lines if line.count(" ") == 3]  # type: ignore[misc]


@pytest.mark.slow
def test_sigkill_of_the_server_loses_and_duplicates_nothing_acknowledged(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    server = ServerProcess(tmp_path / "data")
    with seaway.connect(server.url) as sw:
        for c in range(CLIENTS):
            sw.logs.create(f"client-{c}")
    acks = tmp_path / "acks"
    clients = [subprocess.Popen([sys.executable, "-m", "seaway.testing._producer", server.url, f"client-{c}",
                                 str(acks), str(c)], stderr=subprocess.PIPE, text=True) for c in range(CLIENTS)]
    try:
        for _ in range(KILLS):
            before = len(_acks(acks))
            deadline = time.monotonic() + 60
            while len(_acks(acks)) < before + 3 * CLIENTS and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.3))
            server.kill()
            time.sleep(rng.uniform(0, 0.3))
            server.restart()
        deadline = time.monotonic() + 60
        before = len(_acks(acks))
        while len(_acks(acks)) < before + 3 * CLIENTS and time.monotonic() < deadline:
            time.sleep(0.01)  # every client got through the last restart
        for client in clients:
            assert client.poll() is None, f"seed {seed}: a client died: {client.stderr.read() if client.stderr else ''}"
    finally:
        for client in clients:
            client.send_signal(signal.SIGKILL)
            client.wait(30)
            if client.stderr:
                client.stderr.close()
    try:
        acked = _acks(acks)
        assert len(acked) > KILLS * CLIENTS, f"seed {seed}: too few acknowledged appends to mean anything"
        with seaway.connect(server.url) as sw:
            for c in range(CLIENTS):
                records = [i for i in sw.logs.get(f"client-{c}").read() if isinstance(i, Record)]
                stored = Counter(r.payload for r in records)
                twice = [p[:16] for p, n in stored.items() if n > 1]
                assert not twice, f"seed {seed}: client {c}: {len(twice)} payloads stored twice"
                by_lsn = {r.lsn: r.payload for r in records}
                for client_no, batch, first, count in acked:
                    if client_no != c:
                        continue
                    for i in range(count):
                        assert by_lsn.get(first + i) == payload(c, batch, i), (
                            f"seed {seed}: client {c} batch {batch} record {i} lost or changed")
    except BaseException:
        print(server.log_text()[-6000:])
        raise
    finally:
        server.stop()
