"""What streams use of the log layer: the part of ``sw.logs`` (embedded ``Logs`` or the remote
client's) that they call, as protocols, so that one implementation runs over either."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, Protocol

from seaway.log import ReadItem


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

    def read(self, lsn_from: int = ..., lsn_until: int | None = ...) -> Iterator[ReadItem]: ...


class LogsApi(Protocol):
    """``sw.logs``, embedded or remote."""

    def create_group(self, name: str, first_id: int, last_id: int) -> Any: ...

    def get_or_create(self, name: str, *, group: str | None = ...) -> Any: ...

    def get(self, name_or_id: str | int) -> Any: ...

    def delete(self, log: Any) -> None: ...

    def reader(self, buffered_items_max: int = ..., *, runs: bool = ...) -> Any: ...

    def read(self, starts: Mapping[Any, int], until: int | None = ...) -> Iterator[ReadItem]: ...
