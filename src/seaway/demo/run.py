"""The demo pipeline and its runner (needs ``seaway[spark]``): ``from seaway.demo.run import run_demo``."""

from __future__ import annotations

from seaway.demo._pipeline import (
    ACCESS,
    DEAD_LETTERS,
    PAGE_COUNTS,
    PAGEVIEWS,
    UNIQUE_USERS,
    Pipeline,
    PipelineConfig,
    QueryStats,
    prepare,
)
from seaway.demo._report import Report, read_report
from seaway.demo._run import DemoConfig, DemoResult, DemoStatus, run_demo

__all__ = ["ACCESS", "DEAD_LETTERS", "PAGEVIEWS", "PAGE_COUNTS", "UNIQUE_USERS", "DemoConfig", "DemoResult",
           "DemoStatus", "Pipeline", "PipelineConfig", "QueryStats", "Report", "prepare", "read_report", "run_demo"]
