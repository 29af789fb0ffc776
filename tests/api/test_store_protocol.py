"""One static type for both stores: ``seaway.Store``. A function typed for it takes what
``seaway.open()`` and what ``seaway.connect()`` return, under ``mypy --strict`` and at run time."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy_api

import seaway
from seaway.server import ServerProcess

ROOT = Path(__file__).resolve().parents[2]

# Used the way a user's code would use a store it was handed: logs, their handles and readers,
# metadata, transactions, streams, queues, the ledger and notifications.
USER_CODE = textwrap.dedent('''
    from __future__ import annotations

    import seaway
    from seaway.log import Record


    def count_records(sw: seaway.Store, name: str) -> int:
        log = sw.logs.get_or_create(name)
        log.append_batch([b"a", b"b"])
        last = log.append(b"c")
        assert log.tail_lsn() == last
        with sw.logs.reader() as reader:
            reader.start_reading(log, seaway.OLDEST, last)
            read = [item for item in reader if isinstance(item, Record)]
        again = sum(isinstance(item, Record) for item in sw.logs.read({log: seaway.OLDEST}))
        assert again == len(read) == sum(isinstance(item, Record) for item in log.read())
        with sw.transaction() as tx:
            tx.stage_put("users", name.encode(), b"1")
        got = sw.meta.get("users", name.encode())
        assert got is not None and got.value == b"1"
        names = [info.name for info in sw.logs.list()]
        assert name in names and not sw.closed
        sw.streams.create_scope("typed", exist_ok=True)
        sw.queues.create("typed-queue", exist_ok=True)
        changes = sw.ledger.read(1, limit=10)
        plugins = sw.notify.list()
        assert all(change.index >= 1 for change in changes) and isinstance(plugins, list)
        return len(read)


    def both(path: str, url: str) -> int:
        with seaway.open(path) as embedded:
            total = count_records(embedded, "typed-log")
        with seaway.connect(url) as remote:
            total += count_records(remote, "typed-log")
        return total
''')


def test_a_function_typed_for_the_protocol_accepts_both_stores_under_mypy_strict(tmp_path: Path) -> None:
    user = tmp_path / "user_code.py"
    user.write_text(USER_CODE)
    out, err, status = mypy_api.run(["--strict", "--python-version", "3.11", "--no-error-summary",
                                     "--cache-dir", str(ROOT / ".mypy_cache"), str(user)])
    assert status == 0, out + err
    # ...and it would fail for a store that is not one (the check can fail).
    user.write_text(USER_CODE + "\n\ncount_records(object(), 'x')\n")
    out, _, status = mypy_api.run(["--strict", "--python-version", "3.11", "--no-error-summary",
                                   "--cache-dir", str(ROOT / ".mypy_cache"), str(user)])
    assert status == 1 and '"count_records" has incompatible type "object"' in out, out


def test_the_same_code_runs_on_both_stores_and_both_are_stores(tmp_path: Path, server: ServerProcess) -> None:
    namespace: dict[str, object] = {}
    exec(compile(USER_CODE, "user_code.py", "exec"), namespace)
    both = namespace["both"]
    assert callable(both)
    assert both(str(tmp_path / "data"), server.url) == 6
    with seaway.open(tmp_path / "data") as embedded, seaway.connect(server.url) as remote:
        assert isinstance(embedded, seaway.Store) and isinstance(remote, seaway.Store)
    assert not isinstance(object(), seaway.Store)


def test_a_log_handle_of_one_store_is_refused_by_the_other(tmp_path: Path, server: ServerProcess) -> None:
    with seaway.open(tmp_path / "data") as embedded, seaway.connect(server.url) as remote:
        mine, theirs = embedded.logs.get_or_create("handles"), remote.logs.get_or_create("handles-remote")
        with pytest.raises(seaway.UnknownLogError, match="another"):
            embedded.logs.delete(theirs)
        with pytest.raises(seaway.UnknownLogError, match="another"):
            remote.logs.delete(mine)
        assert embedded.logs.get("handles") == mine and remote.logs.get("handles-remote") == theirs
