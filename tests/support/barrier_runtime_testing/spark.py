"""Test helpers: run an attempt's workers on threads of this process instead of a Spark stage.

:class:`ThreadStageLauncher` is a :class:`~barrier_runtime.spark.attempt.StageLauncher`
that starts every worker on a thread. Workers still talk to the driver (and
rendezvous through it) and to each other over real TCP connections, so the
whole distributed protocol runs — in seconds and without Java. If any worker
fails, the driver fails the attempt and closes the others' connections, which
stops them, as Spark kills the other tasks of a failed barrier stage.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import worker as worker_mod


class ThreadStage:
    def __init__(self, threads: list[threading.Thread]) -> None:
        self._threads = threads

    def cancel(self) -> None:
        """Nothing to kill: the workers stop when the driver closes their connections."""

    def join(self, timeout: float) -> bool:
        for t in self._threads:
            t.join(timeout)
        return not any(t.is_alive() for t in self._threads)


class ThreadStageLauncher:
    """Launches workers on threads; records every launched config (``launched``).

    ``metrics_interval`` replaces the workers' interval between metrics reports.
    """

    def __init__(self, *, metrics_interval: float | None = None) -> None:
        self.launched: list[config_mod.WorkerConfig] = []
        self._metrics_interval = metrics_interval

    def launch(
        self, config: config_mod.WorkerConfig, on_end: Callable[[BaseException | None], None]
    ) -> ThreadStage:
        if self._metrics_interval is not None:
            config = dataclasses.replace(config, metrics_interval=self._metrics_interval)
        self.launched.append(config)
        errors: list[BaseException] = []
        lock = threading.Lock()
        left = [config.parallelism]

        def body(index: int) -> None:
            try:
                worker_mod.run_worker(config, index)
            except BaseException as exc:
                with lock:
                    errors.append(exc)
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                on_end(errors[0] if errors else None)

        threads = [
            threading.Thread(target=body, args=(i,), name=f"cjob-worker-{i}", daemon=True)
            for i in range(config.parallelism)
        ]
        for t in threads:
            t.start()
        return ThreadStage(threads)
