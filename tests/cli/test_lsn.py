"""LSNs as the command reads them: the spelling it prints, decimal, hex; nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seaway import InvalidArgumentError, lsn_str, make_lsn
from seaway.cli._lsn import parse_lsn
from seaway.log import LSN_MAX


@given(st.integers(min_value=0, max_value=LSN_MAX))
def test_every_spelling_of_an_lsn_reads_back(lsn: int) -> None:
    assert parse_lsn(lsn_str(lsn)) == parse_lsn(str(lsn)) == parse_lsn(hex(lsn)) == lsn


def test_the_printed_spelling_and_its_edges() -> None:
    assert parse_lsn("e1n2") == make_lsn(1, 2) == parse_lsn("4294967298") == parse_lsn("0x100000002")
    assert parse_lsn(" E1N2\n") == parse_lsn("0X100000002") == make_lsn(1, 2)  # case and spaces do not matter
    assert parse_lsn("e0n0") == 0 and parse_lsn("e007n01") == make_lsn(7, 1)
    assert parse_lsn("e4294967295n4294967295") == parse_lsn(str(LSN_MAX)) == parse_lsn("0xffffffffffffffff")


@pytest.mark.parametrize("text", [
    "", " ", "e1", "n2", "e1n", "en2", "e-1n2", "1e5", "-1", "+1", "1.0", "0x", "0xg", "x10", "1_000", "0b101",
    "\u0661\u0662",  # Arabic-Indic digits: int() takes them, an LSN does not
    "e1n2 e1n3", "lsn 5", "e4294967296n0", "e0n4294967296", str(LSN_MAX + 1), hex(LSN_MAX + 1), "9" * 5000,
])
def test_anything_else_is_an_invalid_argument(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        parse_lsn(text)
    assert refused.value.code == "INVALID_ARGUMENT"
    assert len(str(refused.value)) < 200  # one short line, even for a huge argument
