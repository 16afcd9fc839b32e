"""Submitting an attempt as one Spark barrier stage, and the task body each worker runs.

``sc.parallelize(range(P), P).barrier().mapPartitions(task).collect()`` runs
in a background thread under a job group named after the attempt, so the
driver can cancel exactly this stage. Barrier mode gang-schedules the P tasks
(all or none) and fails them all if one fails; because it is the final stage
of its job, Spark never retries it ("Could not recover from a failed barrier
ResultStage") — the driver's restart loop does.

:func:`barrier_task` is what the executors' Python workers run: it takes the
task's index from ``BarrierTaskContext``, binds the worker's peer listener at
once (:mod:`~barrier_runtime.spark.rendezvous`; the addresses are exchanged
through the driver, not with Spark's ``allGather``, which costs about a
second) and hands over to :func:`~barrier_runtime.spark.worker.run_worker`,
with the times its first start-up phases ended (the Python worker process
started, the task body entered, the runtime imported). Spark's cloudpickle
sends only a reference to this module-level function plus the
:class:`~barrier_runtime.spark.config.WorkerConfig` as *bytes* of the
data-only :mod:`~barrier_runtime.spark.message_codec` (never pickle):
decoding the config imports the runtime (pyarrow, numpy: ~0.3-0.5 s in a
fresh worker process), which must come after the listener is bound, so this
module imports the runtime lazily too. The pipeline is loaded by each worker
from its reference (see :mod:`~barrier_runtime.spark.pipeline`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from barrier_runtime.spark import rendezvous

if TYPE_CHECKING:
    from barrier_runtime.spark import config as config_mod

log = logging.getLogger(__name__)


def barrier_task(
    config_bytes: bytes, host: str | None, parallelism: int, _partition: Iterable[int]
) -> Iterator[str]:
    """The body of one barrier task: run worker ``partitionId()`` of the attempt.

    ``config_bytes``: the encoded :class:`~barrier_runtime.spark.config.WorkerConfig`
    (its ``host`` and ``parallelism`` come separately, to bind the peer listener first).
    """
    entered = time.time()
    from pyspark import BarrierTaskContext  # noqa: PLC0415 (runs in the executor)

    context = BarrierTaskContext.get()
    peers = rendezvous.listen(host, parallelism)
    try:
        from barrier_runtime.spark import (  # noqa: PLC0415 (after the listener)
            message_codec,
        )
        from barrier_runtime.spark import worker as worker_mod  # noqa: PLC0415 (after the listener)

        imported = time.time()
        config = message_codec.decode_config(config_bytes)
        index = context.partitionId()
        worker_mod.configure_process_logging(index)
        phases = [("task", entered), ("imports", imported)]
        started = process_start_time()
        if started is not None:
            phases.insert(0, ("process", started))
        summary = worker_mod.run_worker(config, index, peers, phases)
    finally:
        peers.close()
    yield json.dumps(summary)


def process_start_time() -> float | None:
    """When this process started (wall clock, ~10 ms resolution; ``None`` where unknown).

    Linux: its age is the system's uptime less the process's start in clock
    ticks after boot (``/proc/self/stat`` field 22).
    """
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
        return time.time() - (uptime - int(fields[19]) / ticks)
    except (OSError, ValueError, IndexError):
        return None


def task_for(config: config_mod.WorkerConfig) -> Callable[[Iterable[int]], Iterator[str]]:
    """The function the stage's ``mapPartitions`` runs, with ``config`` in its closure."""
    from barrier_runtime.spark import message_codec  # noqa: PLC0415 (see the module essay)

    config_bytes = message_codec.encode_config(config)
    return functools.partial(barrier_task, config_bytes, config.host, config.parallelism)


class SparkStage:
    """A submitted barrier stage; ``cancel`` kills its tasks through their job group."""

    def __init__(self, spark_context: Any, group: str, thread: threading.Thread) -> None:
        self._sc = spark_context
        self.group = group
        self._thread = thread

    def cancel(self) -> None:
        try:
            self._sc.cancelJobGroup(self.group)
        except Exception as exc:  # the context may be stopping; the stage ends anyway
            log.debug("cancelling %s: %s", self.group, exc)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()


class SparkStageLauncher:
    """Launches each attempt's workers as one barrier stage on ``session``."""

    def __init__(self, session: Any) -> None:
        self._sc = session.sparkContext

    def launch(
        self, config: config_mod.WorkerConfig, on_end: Callable[[BaseException | None], None]
    ) -> SparkStage:
        group = f"cjob-attempt-{config.attempt}-{uuid.uuid4().hex[:8]}"
        thread = threading.Thread(
            target=self._run, args=(config, group, on_end), name=group, daemon=True
        )
        thread.start()
        return SparkStage(self._sc, group, thread)

    def _run(
        self,
        config: config_mod.WorkerConfig,
        group: str,
        on_end: Callable[[BaseException | None], None],
    ) -> None:
        p = config.parallelism
        try:
            self._sc.setJobGroup(group, f"checkpointed job, attempt {config.attempt}", True)
            rdd = self._sc.parallelize(range(p), p).barrier()
            rdd.mapPartitions(task_for(config)).collect()
        except BaseException as exc:
            on_end(StageFailedError(summarize(exc)))
            return
        on_end(None)


class StageFailedError(RuntimeError):
    """Spark failed (or cancelled) the barrier stage; the message is Spark's first line."""


_BARRIER_TASK = re.compile(r"barrier task ResultTask\(\d+, (\d+)\)")
_JAVA_PREFIXES = ("org.apache.spark.SparkException: ", "Job aborted due to stage failure: ")


def summarize(exc: BaseException) -> str:
    """One line out of a Py4J error's Java stack trace: the worker's own error if it is
    there, else which worker Spark lost and Spark's first line, without Java's prefixes.

    >>> print(summarize(RuntimeError(
    ...     "An error occurred while calling o91.collectAndServe.\\n"
    ...     ": org.apache.spark.SparkException: Job aborted due to stage failure: Could not "
    ...     "recover from a failed barrier ResultStage. Most recent failure reason: Stage "
    ...     "failed because barrier task ResultTask(3, 1) finished unsuccessfully.\\n"
    ...     "\\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages")))
    ...     # doctest: +NORMALIZE_WHITESPACE
    worker 1 was lost: Could not recover from a failed barrier ResultStage. Most recent
    failure reason: Stage failed because barrier task ResultTask(3, 1) finished unsuccessfully.
    """
    text = str(exc)
    for line in text.splitlines():
        if "WorkerFailedError:" in line:
            return line.split("WorkerFailedError:", 1)[1].strip()
    first = ""
    for line in text.splitlines():
        stripped = line.strip().lstrip(":").strip()
        if stripped and not stripped.startswith(("at ", "An error occurred")):
            first = stripped
            break
    for prefix in _JAVA_PREFIXES:
        first = first.removeprefix(prefix)
    lost = _BARRIER_TASK.search(text)
    if lost is not None:
        return f"worker {lost[1]} was lost: {first[:300]}"
    return first[:300] or type(exc).__name__
