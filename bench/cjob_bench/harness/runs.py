"""The one harness: interleaved repeats, failed runs kept apart, S3 credentials, child benchmarks.

Every workload runs its systems through these: per repeat each system runs
once, in an order that reverses every other repeat (A B … B A), so a slow
drift of the machine biases no system; a failed run is recorded with its
error and left out of the medians (:mod:`.report`); the machine and its load
are recorded around every run (:mod:`.machine`).

Latency workloads (W4, W4 on Kafka) rotate the order instead (A B C, B C A, …),
so that every system runs in every position of a repeat.

>>> [interleaved(["ours", "spark", "bytewax"], i) for i in range(2)]
[['ours', 'spark', 'bytewax'], ['bytewax', 'spark', 'ours']]
>>> [rotated(["none", "aligned", "unaligned"], i) for i in range(4)][1:]
[['aligned', 'unaligned', 'none'], ['unaligned', 'none', 'aligned'], ['none', 'aligned', 'unaligned']]
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from barrier_runtime.spark import session
from barrier_runtime.storage.embedded import EmbeddedS3Server

Run = Callable[[], dict[str, Any]]
BENCH = pathlib.Path(__file__).resolve().parents[2]
"""``bench/``: on ``PYTHONPATH`` of every child process a benchmark starts."""


def interleaved(names: list[str], repeat: int) -> list[str]:
    """The order of repeat ``repeat``: ``names`` as given, reversed every other repeat."""
    return list(names) if repeat % 2 == 0 else list(reversed(names))


def rotated(names: list[str], repeat: int) -> list[str]:
    """The order of repeat ``repeat``: ``names`` rotated left by ``repeat``."""
    shift = repeat % len(names) if names else 0
    return names[shift:] + names[:shift]


def logger(tag: str) -> Callable[[str], None]:
    """Progress lines on stderr, ``[tag HH:MM:SS] message`` (stdout is the JSON)."""

    def log(message: str) -> None:
        print(f"[{tag} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    return log


log = logger("suite")


@contextlib.contextmanager
def s3_credentials(server: EmbeddedS3Server) -> Iterator[None]:
    """Credentials in the environment before Spark starts: the executors inherit it."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ["AWS_ACCESS_KEY_ID"] = server.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = server.secret_key
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def attempt(label: str, run: Run) -> dict[str, Any]:
    try:
        result = run()
    except Exception as exc:  # one failed run must not lose the others
        log(f"{label}: FAILED {exc!r}")
        return {"error": repr(exc), "traceback": traceback.format_exc()[-2000:]}
    brief = {
        k: result.get(k) for k in ("wall_seconds", "events_per_second", "processing_window_seconds")
    }
    log(f"{label}: {brief} correct={result['correct']['equal']}")
    return result


@contextlib.contextmanager
def spark_and_s3(
    master: str,
    *,
    app_name: str,
    parallelism: int,
    bucket: str,
    conf: dict[str, str] | None = None,
    shuffle_partitions: int | None = None,
) -> Iterator[tuple[Any, EmbeddedS3Server]]:
    """A warm SparkSession and the embedded S3 server with ``bucket``, its credentials in the
    environment before Spark starts (the executors inherit them); both stopped at the end."""
    with EmbeddedS3Server(buckets=[bucket]) as s3, s3_credentials(s3):
        spark = session.build_session(master, app_name=app_name, parallelism=parallelism, conf=conf)
        try:
            if shuffle_partitions is not None:
                spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
            yield spark, s3
        finally:
            spark.stop()


def bench_script(module: str, args: list[str]) -> dict[str, Any]:
    """Another benchmark (``python -m module``), in its own process: its JSON, as it printed it."""
    log(f"running python -m {module} {' '.join(args)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH), *sys.path]))
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
        env=env,
    )
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}", "stderr": done.stderr[-2000:]}
    return {"wall_seconds": round(time.time() - started, 3), "result": json.loads(done.stdout)}
