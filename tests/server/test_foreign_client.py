"""The server driven by stubs generated from seaway.proto alone, in a process that never imports
seaway: what the .proto documents is enough for a client in another language."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from seaway.server import ServerProcess

PROTO = Path(__file__).parents[2] / "src" / "seaway" / "wire" / "seaway.proto"


def test_a_client_generated_from_the_proto_alone(tmp_path: Path) -> None:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    shutil.copy(PROTO, stubs / "seaway_v1.proto")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{stubs}", f"--python_out={stubs}",
                    f"--grpc_python_out={stubs}", str(stubs / "seaway_v1.proto")], check=True)
    with ServerProcess(tmp_path / "data", token="s3cret") as server:
        ran = subprocess.run([sys.executable, str(Path(__file__).parent / "foreign" / "client.py"), str(stubs),
                              server.address, "s3cret"], capture_output=True, text=True, timeout=120, check=False)
        assert ran.returncode == 0, ran.stderr + server.log_text()[-3000:]
        log = server.log_text()
    seen = json.loads(ran.stdout)
    first_lsn, count, again = seen["appended"]
    assert count == 2 and again == first_lsn  # the repeat of an idempotent batch is answered, not stored
    assert seen["read"] == [["BRIDGE", 1, first_lsn - 1], [first_lsn, "a"], [first_lsn + 1, "b"]]
    assert seen["unknown"] == {"status": "NOT_FOUND", "code": "UNKNOWN_LOG", "retriable": "0"}
    assert seen["wrong_token"] == {"status": "UNAUTHENTICATED", "code": "UNAUTHENTICATED", "retriable": "0"}
    assert seen["undecodable"] == {"status": "INVALID_ARGUMENT", "code": "INVALID_ARGUMENT", "retriable": "0"}
    assert seen["after_seal"] == {"status": "FAILED_PRECONDITION", "code": "LOG_SEALED", "retriable": "0"}
    assert seen["final_lsn"] == first_lsn + 1
    assert "Traceback" not in log
