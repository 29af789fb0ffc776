"""The stream limits hold through a server as they do embedded: a stream of ``SEGMENTS_MAX``
segments is created and truncated by a remote client, and both changes are recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

import seaway
from seaway.ledger import StreamCreated, StreamTruncated
from seaway.log import LSN_OLDEST
from seaway.server import ServerProcess
from seaway.streams import StreamCut
from seaway.streams._config import SEGMENTS_MAX


@pytest.mark.slow
def test_a_remote_client_creates_and_truncates_a_stream_of_the_most_segments(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server, seaway.connect(server.url) as sw:
        sw.streams.create_scope("s")
        mark = sw.ledger.bounds()[1]
        stream = sw.streams.create("s/x", segments=SEGMENTS_MAX)
        segments = stream.current_segments()
        assert len(segments) == SEGMENTS_MAX
        sw.logs.get(segments[0].log_id).append_batch([b"a", b"b"])
        cut = StreamCut("s/x", {s.id: (LSN_OLDEST + 1 if s is segments[0] else LSN_OLDEST) for s in segments})
        stream.truncate(cut)
        assert stream.head() == cut
        found = []
        index = mark + 1
        while page := sw.ledger.read(index, 1000):
            found.extend(e.change for e in page if e.operation.startswith("stream."))
            index = page[-1].index + 1
        assert [type(c) for c in found] == [StreamCreated, StreamTruncated]
        assert found[1] == StreamTruncated("s/x", SEGMENTS_MAX, 0)
