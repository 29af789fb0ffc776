"""The benchmarks of ``seaway bench``: each prints figures and ratios against a reference measured in the same
run. Loaded only when ``seaway bench`` runs."""

from seaway.bench._command import add_bench_parsers, run_bench

__all__ = ["add_bench_parsers", "run_bench"]
