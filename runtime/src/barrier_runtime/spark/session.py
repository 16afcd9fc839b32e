"""Building the SparkSession a driver runs its barrier stages on.

Facts this module encodes (docs/architecture.md, 'Execution on Spark'; measured on Spark 4.x):

* PySpark needs Java 17 or newer (:mod:`~.java` finds one and, for runtimes
  without the ``jdk.incubator.vector`` module Spark 4.3 asks for, starts it
  through a launcher that leaves that option out).
* The JVM's own output (start-up errors, Java stack traces) goes to the file
  named by ``$CJOB_JVM_LOG`` when it is set (the CLI sets it, so a terminal
  shows one sentence instead); a JVM that exits at start becomes one
  :class:`SparkUnavailableError` quoting its first error line.
* Local runs must bind everything to 127.0.0.1 (``SPARK_LOCAL_IP``,
  ``spark.driver.host``, ``spark.driver.bindAddress``): the machine's
  hostname may resolve to an unreachable address.
* A master that cannot be reached makes Spark give up after a minute and stop its
  context; that failure becomes one :class:`~.errors.SparkMasterUnreachableError`
  (:mod:`~.master` checks the master before the JVM starts).
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

import contextlib
import os
import pathlib
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import IO, Any

from barrier_runtime.core import types
from barrier_runtime.spark import errors, java
from barrier_runtime.spark import master as master_mod

SparkUnavailableError = errors.SparkUnavailableError
KubernetesAccessError = errors.KubernetesAccessError
JVM_LOG_ENV = "CJOB_JVM_LOG"

LOCAL_IP = "127.0.0.1"
_JAVA_EXCEPTION = re.compile(r"^(?:Caused by: )?[\w$]+(?:\.[\w$]+)*\.[\w$]*(?:Exception|Error)\b")
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


def find_java_home() -> str:
    """The ``JAVA_HOME`` to start Spark with (see :mod:`~.java`)."""
    return str(java.spark_java_home(java.choose()))


def local_slots(master: str) -> int | None:
    """Task slots of a ``local[N]`` master (``None``: not local, or ``local[*]``)."""
    match = _LOCAL_MASTER.match(master.strip())
    if match is None:
        return None
    if match.group(1) is None:
        return 1
    return None if match.group(1) == "*" else int(match.group(1))


def state_backend_conf(backend: types.StateBackend) -> dict[str, str]:
    """Spark settings the state backend needs on its executors (a user's conf wins)."""
    return {f"spark.executorEnv.{k}": v for k, v in backend.executor_env().items()}


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
    choice = java.choose()
    java_home = java.spark_java_home(choice)
    try:
        from pyspark import SparkConf, SparkContext  # noqa: PLC0415 (optional dependency)
        from pyspark.sql import SparkSession  # noqa: PLC0415
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
    spark_conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
    try:
        if SparkContext._active_spark_context is None:
            gateway = _launch_gateway(spark_conf, choice, java_home)
            SparkContext(conf=spark_conf, gateway=gateway)
        session = SparkSession.builder.config(conf=spark_conf).getOrCreate()
        session.sparkContext.setLogLevel("FATAL")  # failures reach the driver as one line
    except Exception as exc:  # py4j's Py4JJavaError: Spark's scheduler backend failed
        refusal = errors.kubernetes_access_error(str(exc)) or master_mod.stopped_context_error(
            str(exc), master
        )
        if refusal is None:
            raise
        raise refusal from exc
    return session


def _launch_gateway(spark_conf: Any, choice: java.JavaChoice, java_home: pathlib.Path) -> Any:
    """Start Spark's JVM, its output in ``$CJOB_JVM_LOG`` when set; one sentence if it dies.

    ``JAVA_HOME`` names ``java_home`` while Spark's launch scripts run, and only
    then: the user's environment keeps its own value.
    """
    from pyspark.errors import PySparkRuntimeError  # noqa: PLC0415 (optional dependency)
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415

    log_path = os.environ.get(JVM_LOG_ENV)
    with _jvm_output(log_path) as output, _java_home(java_home):
        start = 0 if output is None else output.tell()
        try:
            kwargs = {} if output is None else {"stdout": output, "stderr": output}
            return launch_gateway(spark_conf, popen_kwargs=kwargs)  # type: ignore[no-untyped-call]
        except PySparkRuntimeError as exc:
            if exc.getCondition() != "JAVA_GATEWAY_EXITED":
                raise
            message = _jvm_exit_message(choice.runtime, log_path, start)
            raise SparkUnavailableError(message) from exc


@contextlib.contextmanager
def _java_home(home: pathlib.Path) -> Iterator[None]:
    saved = os.environ.get("JAVA_HOME")
    os.environ["JAVA_HOME"] = str(home)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["JAVA_HOME"]
        else:
            os.environ["JAVA_HOME"] = saved


@contextlib.contextmanager
def _jvm_output(log_path: str | None) -> Iterator[IO[bytes] | None]:
    if not log_path:
        yield None
        return
    with open(log_path, "ab") as output:  # the JVM keeps its own copy of the descriptor
        yield output


def _jvm_exit_message(runtime: java.JavaRuntime | None, log_path: str | None, start: int) -> str:
    which = runtime.describe() if runtime else "Java"
    if not log_path:
        return f"Spark's JVM ({which}) exited while starting: its output is above"
    return (
        f"Spark's JVM ({which}) exited while starting: "
        f"{_first_error(pathlib.Path(log_path), start)}; its full output is in {log_path}"
    )


def _first_error(log: pathlib.Path, start: int) -> str:
    """The most telling line the JVM wrote after ``start`` (an error line), or its last one."""
    try:
        with log.open("rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return "no output"
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    for telling in (_JAVA_EXCEPTION.search, lambda line: line.startswith(("Error", "JAVA_HOME"))):
        for line in lines:
            if telling(line):
                return line
    return lines[-1] if lines else "no output"


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
