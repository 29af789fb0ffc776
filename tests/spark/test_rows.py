"""The source's record batches: built from buffers, equal to what ``pa.array`` makes of the same
values, and without loading pandas into Spark's worker processes (``pa.array`` of a Python list
imports it: about half a second in each new worker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]

from seaway.spark._rows import _Columns, to_batch

SCHEMA = pa.schema([("routing_key", pa.string()), ("payload", pa.binary()),
                    ("event_time", pa.timestamp("us", tz="UTC")), ("segment", pa.string()), ("position", pa.int64())])


def test_a_batch_holds_the_events_as_pa_array_would_make_them() -> None:
    columns = _Columns()
    columns.add_run(4294967297, 1_700_000_000_000, [b"", b"one", bytes(range(256)) * 5])
    columns.add(4294967300, 1_700_000_000_001, b"four", "key-4")
    batch = to_batch(columns, "1.2", SCHEMA)
    assert batch.schema == SCHEMA
    expected = pa.RecordBatch.from_arrays([
        pa.array([None, None, None, "key-4"], pa.string()),
        pa.array([b"", b"one", bytes(range(256)) * 5, b"four"], pa.binary()),
        pa.array([1_700_000_000_000_000] * 3 + [1_700_000_000_001_000], pa.int64()).cast(SCHEMA.field(2).type),
        pa.array(["1.2"] * 4, pa.string()),
        pa.array([4294967297, 4294967298, 4294967299, 4294967300], pa.int64())], schema=SCHEMA)
    assert batch.equals(expected)
    batch.validate(full=True)


def test_making_a_batch_does_not_load_pandas() -> None:
    code = ("import sys\n"
            "import pyarrow as pa\n"
            "from seaway.spark._rows import _Columns, to_batch\n"
            "columns = _Columns()\n"
            "columns.add_run(1, 5, [b'x' * 100] * 1000)\n"
            "schema = pa.schema([('routing_key', pa.string()), ('payload', pa.binary()),"
            " ('event_time', pa.timestamp('us', tz='UTC')), ('segment', pa.string()), ('position', pa.int64())])\n"
            "assert to_batch(columns, '0.0', schema).num_rows == 1000\n"
            "print('pandas' in sys.modules)\n")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "False"
