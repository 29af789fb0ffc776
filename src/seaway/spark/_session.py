"""A local Spark session set up for Seaway: the workers run this interpreter, the source is registered."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from seaway.spark._datasource import SeawayDataSource


def session(app_name: str = "seaway", master: str = "local[2]", conf: Mapping[str, str] | None = None) -> Any:
    """Get or create a SparkSession with the ``seaway`` data source registered.

    Spark's Python workers are started with this interpreter (``PYSPARK_PYTHON``), so that they import
    the same installed seaway. Starting a session costs seconds: share one per process.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.appName(app_name).master(master)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.streaming.stopGracefullyOnShutdown", "true"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(SeawayDataSource)
    return spark
