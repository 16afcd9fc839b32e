"""Who uses the machine's CPU during a run, window by window (``kafka-latency --cpu-timeline``).

A thread reads ``utime + stime`` of every process in ``/proc`` each ``period`` seconds and
charges the growth to the process's *kind*, told from its command line: the Kafka
``broker``, Spark's JVM (``spark_jvm``), PySpark's Python ``workers``, the run's ``feed``
and ``watch``, the ``s3`` server, this process (``driver``: the harness, and for ours the
job's driver), and ``other``. A process's first sample only sets its baseline, so one
that lives less than a period is not counted; on these runs the kinds' processes live
for the whole run. The figures are cores (CPU seconds per second) per window of the feed,
e.g. to tell a component warming up on the same cores from the system under test.

It also sums, per kind, the time its threads were runnable but waited for a core
(``run_delay``, the second field of ``/proc/PID/task/TID/schedstat``): ``waiting`` is
seconds of such waiting per second, summed over the kind's threads. On a saturated
machine a thread that has work waits there; it is the scheduler's share of a latency.

>>> kind_of(["java", "-cp", "x", "kafka.Kafka", "server.properties"], own=False)
'broker'
>>> kind_of(["/v/bin/python", "-m", "pyspark.daemon"], own=False)
'workers'
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")
KINDS = ("broker", "spark_jvm", "workers", "feed", "watch", "s3", "driver", "other")


def kind_of(argv: Sequence[str], *, own: bool) -> str:
    """The kind of a process from its command line (``own``: this process)."""
    if own:
        return "driver"
    if not argv:
        return "other"
    program = os.path.basename(argv[0])
    if program == "java" or program.endswith("/java"):
        return "broker" if any(a.endswith("kafka.Kafka") for a in argv) else "spark_jvm"
    text = " ".join(argv[:4])
    for needle, kind in (
        ("pyspark.daemon", "workers"),
        ("pyspark.worker", "workers"),
        ("cjob_bench.nexmark.kafka.feed", "feed"),
        ("cjob_bench.nexmark.kafka.watch", "watch"),
    ):
        if needle in text:
            return kind
    return "s3" if program in ("weed", "minio") else "other"


def _run_delay_ns(pid: int) -> int:
    """Nanoseconds the process's threads have waited on a run queue (0: not readable)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


def _sample() -> dict[int, tuple[str, int, int]]:
    me = os.getpid()
    out: dict[int, tuple[str, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])
        out[pid] = (kind_of(argv, own=pid == me), ticks, _run_delay_ns(pid))
    return out


class CpuTimeline:
    """Samples ``/proc`` on a thread from :meth:`start` to :meth:`stop`."""

    def __init__(self, period: float = 1.0) -> None:
        self.period = period
        self.samples: list[dict[str, Any]] = []
        """One per period: ``t`` (wall-clock s, the period's end), ``cores`` and ``waiting``
        (run-queue seconds per second, summed over threads) by kind."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-timeline", daemon=True)

    def start(self) -> CpuTimeline:
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(10)
        return self.samples

    def _loop(self) -> None:
        before, at = _sample(), time.monotonic()
        while not self._stop.wait(self.period):
            now, t = _sample(), time.monotonic()
            cores, waiting = dict.fromkeys(KINDS, 0.0), dict.fromkeys(KINDS, 0.0)
            for pid, (kind, ticks, delay) in now.items():
                if pid in before:
                    cores[kind] += max(0, ticks - before[pid][1]) / TICK / (t - at)
                    waiting[kind] += max(0, delay - before[pid][2]) / 1e9 / (t - at)
            self.samples.append({"t": time.time(), "cores": cores, "waiting": waiting})
            before, at = now, t


def by_window(samples: Sequence[dict[str, Any]], first: float, window: float = 10.0) -> list[Any]:
    """Mean cores (and run-queue waiting) per kind in each ``window`` s from ``first``.

    >>> samples = [{"t": 101.0, "cores": {"broker": 0.8}}, {"t": 102.0, "cores": {"broker": 0.4}},
    ...            {"t": 111.0, "cores": {"broker": 0.3}}]
    >>> by_window(samples, first=100.0)
    [{'from_s': 0.0, 'cores': {'broker': 0.6}}, {'from_s': 10.0, 'cores': {'broker': 0.3}}]
    """
    groups: dict[int, list[dict[str, Any]]] = {}
    for s in samples:
        groups.setdefault(int((s["t"] - first) // window), []).append(s)
    out = []
    for i in sorted(groups):
        entry: dict[str, Any] = {"from_s": i * window}
        for field in ("cores", "waiting"):
            rows = [s[field] for s in groups[i] if field in s]
            if rows:
                kinds = sorted({k for r in rows for k in r})
                entry[field] = {
                    k: round(sum(r.get(k, 0.0) for r in rows) / len(rows), 2) for k in kinds
                }
        out.append(entry)
    return out
