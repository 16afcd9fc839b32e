"""Start-up benchmark: submit → every worker running → first record at the sink, per attempt.

Two situations, interleaved repeat by repeat (medians printed as JSON):

* **warm**: one ``local[P]`` SparkSession in this process (as a long-lived
  driver has); each repeat runs a fresh :class:`~barrier_runtime.spark.driver.SparkDriver`
  of ``startup_pipeline.py``. Attempt 0 starts from an empty store; once it
  has completed a checkpoint, the benchmark SIGKILLs one worker (by the pid
  in its sink's stamp) and times attempt 1, which restores that checkpoint.
  Per attempt: submit (the stage launch) → all workers ``Running`` (seen by the
  driver) → first record at a sink; for the restart also kill → submit
  (failure noticed, old stage torn down, backoff of 0.1 s) and kill → first record.
  When the workers report their start-up phases (``Running.startup``) the
  breakdown is printed too (median per phase, seconds after submit).
* **cold**: ``cjob run startup_pipeline.py`` in a fresh process, as a user
  starts it: spawn → "Spark ready" → first record, then the same worker kill
  → first record of the restarted attempt.

Start-up is measured as users see it: with a bytecode cache. This machine
sets ``PYTHONDONTWRITEBYTECODE=1``; the benchmark unsets it (also for the
Spark workers, which inherit this process's environment) and compiles the
runtime and the benchmark first.

Usage: ``python -m cjob_bench run startup [--repeats 3] [--modes warm,cold] [--out FILE]``
(with ``runtime/src`` and ``bench`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import config, driver, pipeline, session, stage
from cjob_bench.harness import bytecode, machine

HERE = pathlib.Path(__file__).resolve().parent
PIPELINE = str(HERE / "startup_pipeline.py")
P = 2
TIMEOUT = 120.0


def _stamps(directory: pathlib.Path) -> list[dict[str, Any]]:
    found = []
    for path in directory.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            found.append(json.loads(path.read_text()))
    return sorted(found, key=lambda s: float(s["first"]))


def _wait(condition: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.005)
    raise TimeoutError(f"timed out waiting for {what}")


def _first_after(stamps: pathlib.Path, t: float, count: int = 1) -> list[dict[str, Any]] | None:
    after = [s for s in _stamps(stamps) if s["first"] > t]
    return after[:count] if len(after) >= count else None


# -- warm: a SparkSession in this process ------------------------------------------------


class _TimingLauncher:
    """Wraps the Spark stage launcher; records when each attempt's stage was submitted."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.launched: dict[int, float] = {}

    def launch(self, config: Any, on_end: Callable[[BaseException | None], None]) -> Any:
        self.launched[config.attempt] = time.time()
        return self._inner.launch(config, on_end)


def warm_once(spark: Any, tmp: pathlib.Path) -> dict[str, Any]:
    stamps = tmp / "stamps"
    stamps.mkdir()
    launcher = _TimingLauncher(stage.SparkStageLauncher(spark))
    spec = driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(PIPELINE, ["--stamps", str(stamps)]),
        parallelism=P,
        store=config.StoreRef(str(tmp / "store"), "default/startup"),
        checkpoint=CheckpointConfig(interval=0.5),
        restart=driver.RestartSettings(
            max_restarts=5, window=600, backoff=Backoff(initial=0.1, max=0.1, jitter=0.0)
        ),
    )
    job = driver.SparkDriver(spec, session=spark, launcher=launcher)
    running: dict[int, float] = {}
    startups: dict[int, Any] = {}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            current = job.runner.current
            if current is not None and current.number not in running and current.ready:
                times = getattr(current, "startup", None)  # absent before the driver recorded it
                running[current.number] = (times and times.running_at) or time.time()
                startups[current.number] = times.slowest_phases() if times else None
            time.sleep(0.002)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            job.run()
        except BaseException as exc:
            errors.append(exc)

    watcher = threading.Thread(target=watch, daemon=True)
    runner = threading.Thread(target=run, daemon=True)
    watcher.start()
    runner.start()
    try:
        first0 = _wait(lambda: _first_after(stamps, 0.0, P), "attempt 0's records")[0]
        _wait(lambda: job.job.result.completed_checkpoints, "a completed checkpoint")
        killed = time.time()
        os.kill(int(first0["pid"]), signal.SIGKILL)
        _wait(lambda: 1 in launcher.launched, "attempt 1's launch")
        first1 = _wait(lambda: _first_after(stamps, launcher.launched[1]), "attempt 1's record")[0]
        _wait(lambda: 1 in running, "attempt 1 running", 10)
    finally:
        job.job.abort("benchmark done")
        runner.join(60)
        stop.set()
    return {
        "attempt0": _attempt(
            launcher.launched[0], running.get(0), first0["first"], startups.get(0)
        ),
        "attempt1": _attempt(launcher.launched[1], running.get(1), first1["first"], startups.get(1))
        | {
            "kill_to_submit": launcher.launched[1] - killed,
            "kill_to_first_record": first1["first"] - killed,
        },
    }


def _attempt(submit: float, running: float | None, first: float, startup: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "submit_to_running": None if running is None else running - submit,
        "submit_to_first_record": first - submit,
    }
    if startup:
        out["phases"] = startup  # seconds after submit at which the slowest worker finished each
    return out


# -- cold: `cjob run` in a fresh process ----------------------------------------------------


def cold_once(tmp: pathlib.Path, env: dict[str, str]) -> dict[str, Any]:
    stamps = tmp / "stamps"
    stamps.mkdir()
    command = [
        *(sys.executable, "-m", "barrier_runtime.cli", "run", PIPELINE, "-p", str(P)),
        *("--store", str(tmp / "store"), "--json", "--no-control-api"),
        *("--checkpoint-interval", "0.5", "--restart-backoff", "0.1", "--status-every", "1000"),
        *("--", "--stamps", str(stamps)),
    ]
    events: list[tuple[float, dict[str, Any]]] = []
    spawned = time.time()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    events.append((time.time(), json.loads(line)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        first0 = _wait(lambda: _first_after(stamps, 0.0, P), "every worker's records")[0]
        started = next((t for t, e in events if e.get("event") == "started"), None)
        _wait(lambda: list((tmp / "store").rglob("_metadata")), "a completed checkpoint")
        killed = time.time()
        os.kill(int(first0["pid"]), signal.SIGKILL)
        # every writer of attempt 0 stamped before the kill: a new stamp is attempt 1's
        first1 = _wait(lambda: _first_after(stamps, killed), "the restarted attempt's record")[0]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    return {
        "spawn_to_spark_ready": None if started is None else started - spawned,
        "spark_ready_to_first_record": None if started is None else first0["first"] - started,
        "spawn_to_first_record": first0["first"] - spawned,
        "restart_kill_to_first_record": first1["first"] - killed,
    }


# -- main --------------------------------------------------------------------------------


def _median_tree(runs: list[Any]) -> Any:
    """Median of every numeric leaf across ``runs`` (dicts of the same shape)."""
    if not runs:
        return None
    if isinstance(runs[0], dict):
        keys = {k for r in runs for k in r}
        return {k: _median_tree([r[k] for r in runs if k in r and r[k] is not None]) for k in keys}
    values = [float(v) for v in runs if v is not None]
    return round(statistics.median(values), 3) if values else None


_load = machine.loadavg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default="warm,cold")
    parser.add_argument(
        "--out", "--output", dest="out", default=None, help="also write the JSON here"
    )
    ns = parser.parse_args(argv)
    modes = [m for m in ns.modes.split(",") if m]
    bytecode.use_bytecode_cache()  # measure as users run: with a cache
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    spark = None
    session_s = None
    if "warm" in modes:
        t = time.monotonic()
        spark = session.build_session(f"local[{P}]", app_name="cjob-startup-bench", parallelism=P)
        session_s = time.monotonic() - t
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    load = [_load()]
    for repeat in range(ns.repeats):
        for mode in modes:
            with tempfile.TemporaryDirectory(prefix=f"cjob-startup-{mode}-") as tmp:
                run = (
                    warm_once(spark, pathlib.Path(tmp))
                    if mode == "warm"
                    else cold_once(pathlib.Path(tmp), env)
                )
            print(f"# repeat {repeat} {mode}: {json.dumps(run)}", file=sys.stderr, flush=True)
            results[mode].append(run)
        load.append(_load())
    report = {
        "benchmark": "startup",
        "parallelism": P,
        "repeats": ns.repeats,
        "spark_session_seconds": session_s,
        "load_average": load,
        "median": {m: _median_tree(r) for m, r in results.items()},
        "runs": results,
    }
    text = json.dumps(report, indent=2, sort_keys=True)
    print(text)
    if ns.out:
        pathlib.Path(ns.out).write_text(text + "\n")
    if spark is not None:
        spark.stop()


if __name__ == "__main__":
    main()
