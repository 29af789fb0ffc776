"""The protocol's pure parts: message conversions, error codes, and the generated code being current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import seaway
from seaway import Gap, GapType, Record
from seaway.wire import error_from_status, error_metadata, items_from_msg, items_to_msg, seaway_pb2, status_of

_item = st.one_of(
    st.builds(lambda lsn, ts, p: Record(7, lsn, ts, p), st.integers(1, 2**64 - 1), st.integers(0, 2**62),
              st.binary(max_size=64)),
    st.builds(lambda t, lo, n: Gap(7, t, lo, min(lo + n, 2**64 - 1)), st.sampled_from(list(GapType)),
              st.integers(1, 2**63), st.integers(0, 1000)),
)


@given(st.lists(_item, max_size=30))
def test_items_survive_the_wire(items: list[Record | Gap]) -> None:
    raw = items_to_msg(7, items).SerializeToString()
    assert items_from_msg(seaway_pb2.ReadItems.FromString(raw)) == items


def test_every_error_crosses_the_wire_as_its_own_class() -> None:
    classes = [getattr(seaway, n) for n in seaway.__all__ if n.endswith("Error")]
    for cls in classes:
        error = cls("message")
        back = error_from_status(status_of(error), "message", error_metadata(error))
        assert type(back) is cls and back.retriable == cls.retriable and str(back) == "message"


def test_transport_failures_without_a_code() -> None:
    assert isinstance(error_from_status(grpc.StatusCode.UNAVAILABLE, "down", ()), seaway.UnavailableError)
    assert isinstance(error_from_status(grpc.StatusCode.RESOURCE_EXHAUSTED, "big", ()), seaway.PayloadTooLargeError)
    assert isinstance(error_from_status(grpc.StatusCode.DEADLINE_EXCEEDED, "slow", ()), seaway.TimedOutError)
    # Read by its code only: a server error without a Seaway code is not guessed from its text.
    untyped = error_from_status(grpc.StatusCode.INTERNAL, "Exception deserializing request!", ())
    assert type(untyped) is seaway.ServerError


def test_record_runs_outside_the_lsn_range_are_refused() -> None:
    msg = seaway_pb2.ReadItems(log_id=1)
    msg.runs.add().records.CopyFrom(seaway_pb2.RecordRun(first_lsn=2**64 - 1, payloads=[b"a", b"b"]))
    with pytest.raises(seaway.InvalidArgumentError):
        items_from_msg(msg)


@given(st.lists(st.binary(max_size=20), min_size=1, max_size=20), st.integers(1, 2**40))
def test_record_runs_arrive_as_records(payloads: list[bytes], first: int) -> None:
    run = seaway.RecordRun(3, first, 99, payloads)
    msg = seaway_pb2.ReadItems.FromString(items_to_msg(3, [run]).SerializeToString())
    assert items_from_msg(msg) == run.records()


def test_generated_code_matches_the_proto(tmp_path: Path) -> None:
    src = Path(seaway.__file__).parent.parent
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{src}", f"--python_out={tmp_path}",
                    f"--grpc_python_out={tmp_path}", f"--pyi_out={tmp_path}", str(src / "seaway/wire/seaway.proto")],
                   check=True)
    for name in ("seaway_pb2.py", "seaway_pb2_grpc.py", "seaway_pb2.pyi"):
        generated = (tmp_path / "seaway" / "wire" / name).read_text()
        assert generated == (src / "seaway" / "wire" / name).read_text(), f"run `make proto`: {name} is stale"
