"""Test helpers: run an attempt's workers on threads of this process instead of a Spark stage.

:class:`ThreadStageLauncher` is a :class:`~barrier_runtime.spark.attempt.StageLauncher`
that starts every worker on a thread and rendezvouses them with an in-process
``all_gather``. Workers still talk to the driver and to each other over real
TCP connections, so the whole distributed protocol runs — in seconds and
without Java. If any worker fails, the others are told to stop, as Spark
kills the other tasks of a failed barrier stage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import worker as worker_mod


class _AllGather:
    """``BarrierTaskContext.allGather`` for threads: everyone gets every message, by index."""

    def __init__(self, parties: int) -> None:
        self._messages: dict[int, str] = {}
        self._barrier = threading.Barrier(parties)
        self._lock = threading.Lock()

    def bind(self, index: int) -> Callable[[str], list[str]]:
        def all_gather(message: str) -> list[str]:
            with self._lock:
                self._messages[index] = message
            self._barrier.wait(timeout=60)
            with self._lock:
                return [self._messages[i] for i in sorted(self._messages)]

        return all_gather

    def abort(self) -> None:
        self._barrier.abort()


class ThreadStage:
    def __init__(self, threads: list[threading.Thread], gather: _AllGather) -> None:
        self._threads = threads
        self._gather = gather

    def cancel(self) -> None:
        self._gather.abort()

    def join(self, timeout: float) -> bool:
        for t in self._threads:
            t.join(timeout)
        return not any(t.is_alive() for t in self._threads)


class ThreadStageLauncher:
    """Launches workers on threads; records every launched config (``launched``)."""

    def __init__(self) -> None:
        self.launched: list[config_mod.WorkerConfig] = []

    def launch(
        self, config: config_mod.WorkerConfig, on_end: Callable[[BaseException | None], None]
    ) -> ThreadStage:
        self.launched.append(config)
        gather = _AllGather(config.parallelism)
        errors: list[BaseException] = []
        lock = threading.Lock()
        left = [config.parallelism]

        def body(index: int) -> None:
            try:
                worker_mod.run_worker(config, index, gather.bind(index))
            except BaseException as exc:
                with lock:
                    errors.append(exc)
                gather.abort()
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
        return ThreadStage(threads, gather)
