"""The child side of the demo's crash test: the demo's Spark driver, processing what the access
stream holds (it generates nothing), to be SIGKILLed with its JVM and run again.

Run as ``python -m seaway.testing._demo_child ADDRESS DATA_DIR WINDOW_S`` in a session of its own;
it exits 0 once the demo drained its queries and read its report.
"""

from __future__ import annotations

import sys
from pathlib import Path

from seaway.demo.run import DemoConfig, run_demo
from seaway.spark import session


def main(argv: list[str]) -> int:
    address, data_dir, window_s = argv
    config = DemoConfig(data_dir=Path(data_dir), address=address, events_max=0, live=False,
                        window_s=int(window_s), trigger_s=0.5)
    run_demo(config, lambda: session("seaway-demo-crash"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
