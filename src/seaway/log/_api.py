"""What the layers above use of the log layer: the part of ``sw.logs`` (embedded ``Logs`` or the remote
client's) that streams and queues call, as protocols, so that one implementation runs over either."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol, Self

from seaway._values import Durability, PartitionInfo
from seaway.errors import InvalidArgumentError
from seaway.log._config import LogGroup
from seaway.log._handle import AppendCounts, LogBounds, LogHandle
from seaway.log._types import ReadItem


class SegmentLog(Protocol):
    """A segment's log."""

    @property
    def id(self) -> int: ...

    def append_batch_async(self, payloads: Iterable[bytes], *, producer_id: bytes | None = None,
                           sequence: int | None = None, if_tail: int | None = None) -> Future[range]: ...

    def tail_lsn(self) -> int: ...

    def seal(self) -> int: ...

    def final_lsn(self) -> int | None: ...

    def data_size(self) -> int: ...

    def trim(self, lsn: int) -> None: ...

    def find_time(self, timestamp_ms: int) -> int: ...

    def read(self, lsn_from: int = ..., lsn_until: int | None = ...) -> Generator[ReadItem, None, None]: ...


class LogReaderApi(Protocol):
    """``sw.logs.reader()``, embedded or remote: reads several logs at once, in LSN order per log."""

    def start_reading(self, log: LogHandle | int | str, lsn_from: int = ..., lsn_until: int = ...) -> None: ...

    def stop_reading(self, log: LogHandle | int | str) -> None: ...

    def read(self, items_max: int = ..., timeout_s: float | None = ..., *,
             bytes_max: int | None = ...) -> list[ReadItem]: ...

    @property
    def done(self) -> bool: ...

    def wake(self) -> None:
        """Make a :meth:`read` that waits now (or the next one that would wait) return at once,
        with nothing: for a thread that must look at something else (a server's read stream, at
        its client's control messages)."""

    def close(self) -> None: ...

    def __iter__(self) -> Iterator[ReadItem]: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


class LogsApi(Protocol):
    """``sw.logs``, embedded or remote: what the layers above use, and what a function that takes
    either store sees."""

    def create(self, name: str, *, log_id: int | None = ..., group: str | None = ...,
               backlog_s: float | None = ..., payload_bytes_max: int = ...,
               durability: Durability = ...) -> LogHandle: ...

    def create_group(self, name: str, first_id: int, last_id: int, *, backlog_s: float | None = ...,
                     payload_bytes_max: int = ..., durability: Durability = ...) -> LogGroup: ...

    def get(self, name_or_id: str | int) -> LogHandle: ...

    def get_or_create(self, name: str, *, group: str | None = ..., backlog_s: float | None = ...,
                      payload_bytes_max: int = ..., durability: Durability = ...) -> LogHandle: ...

    def delete(self, log: LogHandle | int | str) -> None: ...

    def list(self) -> Sequence[LogHandle]: ...

    def groups(self) -> Sequence[LogGroup]: ...

    def partitions(self) -> Sequence[PartitionInfo]: ...

    def run_retention(self) -> Sequence[int]: ...

    def reader(self, buffered_items_max: int = ..., *, runs: bool = ...,
               buffered_bytes_max: int = ...) -> LogReaderApi: ...

    def read(self, starts: Mapping[LogHandle | int | str, int],
             until: int | None = ...) -> Generator[ReadItem, None, None]: ...

    def append_counts(self, log_ids: Iterable[int]) -> Mapping[int, AppendCounts]: ...

    def bounds(self, log_ids: Iterable[int]) -> Mapping[int, LogBounds]: ...

    def count_records(self, ranges: Mapping[int, tuple[int, int | None]]) -> Mapping[int, int]: ...


def check_logs_api(logs: object, what: str) -> None:
    """Raise :class:`InvalidArgumentError` unless ``logs`` has the methods of :class:`LogsApi`
    (what ``sw.logs`` of any store has): a clear error at once rather than a missing attribute
    later, in a background pass."""
    missing = [name for name in _LOGS_API_METHODS if not callable(getattr(logs, name, None))]
    if missing:
        raise InvalidArgumentError(f"{what} must be a store's logs (seaway.log.LogsApi, what sw.logs is), "
                                   f"got {type(logs).__name__}, which has no {', '.join(missing)}")


_LOGS_API_METHODS = tuple(name for name in vars(LogsApi) if not name.startswith("_"))


def read_logs(reader: LogReaderApi, resolve: Callable[[LogHandle | int | str], LogHandle],
              starts: Mapping[LogHandle | int | str, int], until: int | None) -> Generator[ReadItem, None, None]:
    """What every ``LogsApi.read`` returns: ``reader`` started on each log of ``starts`` (named as
    ``resolve`` finds it) up to ``until``, by default its tail now (a log with nothing there is
    left out), iterated to its end and closed however the iteration ends (or at once on an error)."""
    try:
        for log, lsn_from in starts.items():
            resolved = resolve(log)
            lsn_until = resolved.tail_lsn() if until is None else until
            if lsn_from <= lsn_until:
                reader.start_reading(resolved, lsn_from, lsn_until)
    except BaseException:
        reader.close()
        raise
    return closing_iter(reader)


def closing_iter(reader: LogReaderApi) -> Generator[ReadItem, None, None]:
    """Iterate a reader to its end, and close it however the iteration ends."""
    with reader:
        yield from reader
