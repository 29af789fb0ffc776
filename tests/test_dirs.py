"""make_dir_durable: every directory it creates is fsynced into its parent (the power-loss tests
show what is lost otherwise: tests/powerloss/test_power_loss.py::test_a_new_store_survives_power_loss)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seaway import _dirs
from seaway._dirs import make_dir_durable


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The directories fsynced, in order (and really fsynced)."""
    calls: list[Path] = []
    real = _dirs.fsync_dir

    def record(path: Path) -> None:
        assert path.is_dir(), path
        calls.append(path)
        real(path)

    monkeypatch.setattr(_dirs, "fsync_dir", record)
    return calls


def test_each_new_directory_is_fsynced_into_its_parent_after_it_is_made(tmp_path: Path, fsynced: list[Path]) -> None:
    make_dir_durable(tmp_path / "a" / "b" / "c")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    assert fsynced == [tmp_path, tmp_path / "a", tmp_path / "a" / "b"]


def test_an_existing_directory_is_fsynced_into_its_parent_again(tmp_path: Path, fsynced: list[Path]) -> None:
    # An earlier open may have been killed between its mkdir and its fsync.
    (tmp_path / "a" / "b").mkdir(parents=True)
    make_dir_durable(tmp_path / "a" / "b")
    assert fsynced == [tmp_path / "a"]


def test_a_file_in_the_way_is_an_error(tmp_path: Path, fsynced: list[Path]) -> None:
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        make_dir_durable(tmp_path / "f")
    with pytest.raises(NotADirectoryError):
        make_dir_durable(tmp_path / "f" / "sub")
    assert fsynced == []
