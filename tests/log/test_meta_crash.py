"""The metadata store under SIGKILL: every acknowledged batch is there whole, and no batch is there
in part, acknowledged or not."""

from __future__ import annotations

import os
import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

import seaway
from seaway.testing._meta_crash import KEYS_PER_BATCH, NAMESPACE, THREADS, batch_value
from tests.log.helpers import run_until_killed

KILLS = int(os.environ.get("SEAWAY_CRASH_KILLS", "35"))
_BATCH_KEY = re.compile(rb"r(\d+)/t(\d)/b(\d+)/(\d+)")


@pytest.mark.slow
def test_acknowledged_metadata_batches_survive_sigkill_whole(tmp_path: Path) -> None:
    seed = int(os.environ.get("SEAWAY_CRASH_SEED", str(random.randrange(2**32))))
    rng = random.Random(seed)
    data, acks = tmp_path / "data", tmp_path / "acks"
    revision = 0
    for run in range(KILLS):
        run_until_killed("seaway.testing._meta_crash", data, acks, run, rng, seed, 0.2)

        with seaway.open(data) as sw:
            assert sw.meta.revision >= revision, f"seed {seed}: the revision went back"
            revision = sw.meta.revision
            rows = list(sw.meta.scan_all(NAMESPACE, page=5000))
        found: dict[tuple[int, int, int], dict[int, seaway.Versioned]] = defaultdict(dict)
        counters: dict[int, int] = {}
        for key, versioned in rows:
            assert not key.startswith(b"scratch/"), f"seed {seed}: a range delete was lost: {key!r}"
            if key.startswith(b"counter/"):
                counters[int(key[9:])] = int(versioned.value)
                continue
            m = _BATCH_KEY.fullmatch(key)
            assert m, key
            r, t, b, i = map(int, m.groups())
            assert versioned.value == batch_value(r, t, b, i), f"seed {seed}: {key!r} changed"
            found[(r, t, b)][i] = versioned
        for (r, t, b), keys in found.items():
            assert sorted(keys) == list(range(KEYS_PER_BATCH)), f"seed {seed}: batch {(r, t, b)} is partial"
            assert len({v.version for v in keys.values()}) == 1, f"seed {seed}: batch {(r, t, b)} mixed versions"
        for thread in range(THREADS):
            present = sum(1 for (_, t, _) in found if t == thread)
            assert counters.get(thread, 0) == present, f"seed {seed}: thread {thread}'s counter disagrees"
        for line in acks.read_text().splitlines():
            r, t, b, rev = map(int, line.split())
            assert (r, t, b) in found, f"seed {seed}: acknowledged batch {(r, t, b)} lost"
            assert next(iter(found[(r, t, b)].values())).version == rev, f"seed {seed}: batch {(r, t, b)}"
    assert len(acks.read_text().splitlines()) > KILLS, f"seed {seed}: too few batches to mean anything"
