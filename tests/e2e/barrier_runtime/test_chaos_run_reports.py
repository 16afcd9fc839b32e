"""What ``cjob run --json`` reports through a chaos run on real Spark is what happened.

A paced source the job keeps up with (the keyed running count into the
exactly-once file sink, 3,000 events/s over P=3 workers), checkpoints every
0.3 s to a local store. During the run a Spark worker process is SIGKILLed (the
driver restarts the stage), then the driver itself, while a checkpoint is being
written; a second ``cjob run`` on the same store resumes the job to its end.

* while the source keeps up, every status line reads back-pressure ≤ 10 %;
* the second run announces its first checkpoint id and the id the dead driver
  reserved and never completed (no id goes unexplained);
* the second run's ``summary.records_out`` equals the records the sink published,
  which are exactly the crash-free output (the first driver's share included);
* every event and field either run emitted is documented (docs/json-events.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import threading
from typing import Any

import cli_contract
import pytest
import waiting

from barrier_runtime.connectors.files import FileSink

pytestmark = pytest.mark.slow

KEYS, EVENTS_PER_KEY, RATE = 120, 300, 3_000.0  # 36,000 events: 12 s at the paced rate
P, INTERVAL = 3, 0.3
JOB = "default/chaos"
Event = dict[str, Any]


class CjobRun:
    """A ``cjob run --json`` subprocess in its own session; its events are read as they come."""

    def __init__(self, argv: list[str], cwd: pathlib.Path, name: str) -> None:
        self.stderr = cwd / f"{name}.stderr"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "barrier_runtime.cli", *argv],
            stdout=subprocess.PIPE,
            stderr=self.stderr.open("w"),
            text=True,
            cwd=cwd,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.events: list[Event] = []
        self.garbled: list[str] = []
        """Lines of stdout that are not one JSON event (``--json`` promises there are none)."""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                self.garbled.append(line)

    def of(self, kind: str) -> list[Event]:
        return [e for e in list(self.events) if e["event"] == kind]

    def completed(self) -> list[int]:
        return [e["id"] for e in self.of("checkpoint") if e["status"] == "completed"]

    def wait_for(self, condition: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
        return waiting.wait_until(
            condition,
            timeout,
            what,
            interval=interval,
            explain=lambda: f"last events: {self.events[-5:]}",
        )

    def finish(self, timeout: float) -> Event:
        self.proc.wait(timeout)
        self._reader.join(10)
        err = self.stderr.read_text()
        assert self.proc.returncode == 0, f"cjob run exited {self.proc.returncode}: {err[-3000:]}"
        assert not self.garbled, f"stdout lines that are not one JSON event: {self.garbled}"
        assert self.events and self.events[-1]["event"] == "summary", (self.events[-3:], err)
        return self.events[-1]

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


def _spark_python_workers(session: int) -> list[int]:
    """The PySpark worker processes of a ``cjob run`` (forked by ``pyspark.daemon``)."""
    procs: dict[int, tuple[int, int, str]] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        procs[int(entry.name)] = (int(fields[1]), int(fields[3]), cmdline)
    daemons = {
        pid
        for pid, (_ppid, sid, cmd) in procs.items()
        if sid == session and "pyspark.daemon" in cmd
    }
    return sorted(pid for pid in daemons if procs[pid][0] in daemons)


def _stored_checkpoints(store: pathlib.Path) -> tuple[list[int], list[int]]:
    """The ids of the job's completed checkpoints (with ``_metadata``) and of the
    non-empty checkpoint directories without it, in the store."""
    root = store / JOB / "checkpoints"
    completed, torn = [], []
    for chk in sorted(root.glob("chk-*")) if root.exists() else []:
        number = int(chk.name.split("-")[1])
        if (chk / "_metadata").exists():
            completed.append(number)
        elif any(chk.iterdir()):
            torn.append(number)
    return completed, torn


def _torn_checkpoint(store: pathlib.Path) -> int | None:
    """A checkpoint being written: above the newest completed one, without ``_metadata``."""
    completed, torn = _stored_checkpoints(store)
    newest = max(completed, default=0)
    return next((n for n in torn if n > newest), None)


def _kill_during_a_checkpoint(run: CjobRun, store: pathlib.Path) -> int:
    """SIGKILL the driver while a checkpoint is being written; return that checkpoint's id.

    The driver writes ``_metadata``: frozen (SIGSTOP), it cannot complete the checkpoint
    between the look at the store and the kill.
    """
    for _ in range(50):
        run.wait_for(lambda: _torn_checkpoint(store), 30, "a checkpoint in flight", 0.005)
        os.kill(run.proc.pid, signal.SIGSTOP)
        torn = _torn_checkpoint(store)
        if torn is not None:
            os.kill(run.proc.pid, signal.SIGKILL)
            run.proc.wait(10)
            return torn
        os.kill(run.proc.pid, signal.SIGCONT)
    raise AssertionError("never caught a checkpoint in flight")


def test_a_chaos_run_reports_back_pressure_published_records_and_skipped_ids(
    tmp_path: pathlib.Path,
) -> None:
    store, out = tmp_path / "cp", tmp_path / "out"
    argv = [
        "run",
        "--json",
        "-p",
        str(P),
        "--checkpoint-interval",
        str(INTERVAL),
        "--status-every",
        "1",
        "--restart-backoff",
        "0.2",
        "--store",
        str(store),
        "--job",
        JOB,
        "barrier_runtime.demo",
        "--",
        "--out",
        str(out),
        "--keys",
        str(KEYS),
        "--events-per-key",
        str(EVENTS_PER_KEY),
        "--partitions",
        "4",
        "--batch-size",
        "50",
        "--rate",
        str(RATE),
    ]
    first = CjobRun(argv, tmp_path, "first")
    try:
        # Keeping up: three status lines of the running job, then a worker dies.
        first.wait_for(
            lambda: len([s for s in first.of("status") if s["records_per_s"] > 0]) >= 3,
            120,
            "three status lines of the running job",
        )
        workers = first.wait_for(
            lambda: _spark_python_workers(first.proc.pid), 10, "the Spark worker processes"
        )
        os.kill(workers[0], signal.SIGKILL)
        first.wait_for(lambda: first.of("restart"), 60, "a restart after the worker kill")
        restarted = len(first.of("checkpoint"))
        first.wait_for(
            lambda: len(first.completed()) > restarted + 1, 60, "checkpoints after the restart"
        )
        # The driver dies while a checkpoint is being written: its id is never completed.
        torn = _kill_during_a_checkpoint(first, store)
    finally:
        first.kill_group()
    assert any("WorkerLostError" in f["message"] for f in first.of("failure")), first.events
    stored_completed, _ = _stored_checkpoints(store)
    published_by_first = len(list(FileSink(str(out)).read_committed()))
    assert 0 < published_by_first < KEYS * EVENTS_PER_KEY, "the first driver must die mid-run"

    second = CjobRun(argv, tmp_path, "second")
    try:
        summary = second.finish(timeout=240)
    finally:
        second.kill_group()
    events = first.events + second.events
    print("first driver:", first.events, "\nsecond driver:", second.events)
    cli_contract.assert_events_documented(events)

    # Back-pressure: near zero while the paced source holds its rate. A second well above the
    # rate is a source catching up after a stall, which runs into downstream capacity for real:
    # it is not "keeping up". Within the rate, a single second can still be back-pressured for
    # real: an aligned checkpoint that takes 300 ms on a loaded machine blocks the channels it
    # aligns (CI saw 0.244 in the first second of records, beside a 293 ms checkpoint). The
    # median over the seconds is the claim: a metric that counted the source's pacing sleeps,
    # or summed subtasks without dividing by parallelism, would be high in every second.
    keeping_up = [
        s
        for s in first.of("status") + second.of("status")
        if s["state"] == "RUNNING" and 0.8 * RATE <= s["records_per_s"] <= 1.2 * RATE
    ]
    assert len(keeping_up) >= 3, [s for s in events if s["event"] == "status"]
    assert statistics.median(s["backpressure"] for s in keeping_up) <= 0.10, keeping_up
    assert all(0.0 <= s["backpressure"] <= 1.0 for s in keeping_up), keeping_up

    # Checkpoint ids: the second driver says where it starts and which id it skips.
    reported_first = {e["id"] for e in first.of("checkpoint")}
    (announced,) = second.of("checkpoint_ids")
    assert torn in announced["skipped"]
    assert announced["latest_completed"] == max(stored_completed)
    assert announced["first_id"] > max([torn, *reported_first])
    reported_second = {e["id"] for e in second.of("checkpoint")}
    assert min(reported_second) == announced["first_id"]
    # Every id is named by an event: reported by a driver, announced as the newest completed
    # one (the first driver may die before reporting it) or as skipped.
    named = reported_first | {announced["latest_completed"]} | set(announced["skipped"])
    assert set(range(1, max(reported_second) + 1)) == named | reported_second

    # records_out: exactly what the sink published, over both drivers and all attempts.
    published = list(FileSink(str(out)).read_committed())
    assert summary["status"] == "finished", summary
    assert len(published) == KEYS * EVENTS_PER_KEY
    assert len({(r["key"], r["seq"]) for r in published}) == len(published)  # no duplicates
    assert summary["records_out"] == {"out": len(published)}
