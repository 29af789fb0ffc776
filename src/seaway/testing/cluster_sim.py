"""The cluster simulation's command: ``python -m seaway.testing.cluster_sim --seeds N`` (``make sim``)."""

import sys

from seaway.testing._cluster_sim import ClusterSim, ClusterSimConfig, Faults, SimReport, main, run_seed

__all__ = ["ClusterSim", "ClusterSimConfig", "Faults", "SimReport", "main", "run_seed"]

if __name__ == "__main__":
    sys.exit(main())
