"""How long an attempt took to start, and where the time went.

The driver records when it submitted the attempt's stage and when the last
worker reported ``Running``; each worker reports, with its ``Running``, the
wall-clock time at which it finished each start-up phase, in order:

============  ===================================================================
``process``   the Python worker process started (Spark forked it for the task)
``task``      the barrier task's body began (the task closure was unpickled)
``imports``   the runtime was imported (pyarrow, numpy, the storage clients)
``hello``     the worker said ``Hello`` to the driver (with its peer address)
``pipeline``  the pipeline was loaded and planned
``store``     the checkpoint store was opened
``peers``     the driver's list of peer addresses arrived (the rendezvous)
``connected`` every peer connection is up
``running``   every subtask of the slice was started (restore happens in them)
============  ===================================================================

Times are wall-clock (``time.time()``) on each machine: phases of a remote
worker are only as comparable to the driver's submit time as the clocks are
synchronised (on one machine they are exact).

>>> times = StartupTimes()
>>> times.launched(100.0)
>>> times.worker_running(0, (("imports", 100.4), ("running", 100.9)), 101.0, all_running=False)
>>> times.seconds is None
True
>>> times.worker_running(1, (("imports", 100.5), ("running", 101.1)), 101.2, all_running=True)
>>> round(times.seconds, 3)
1.2
>>> {name: round(t, 3) for name, t in times.slowest_phases().items()}
{'imports': 0.5, 'running': 1.1}
"""

from __future__ import annotations

import threading

Phases = tuple[tuple[str, float], ...]


class StartupTimes:
    """One attempt's start-up: submit → every worker running, and each worker's phases."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._launched: float | None = None
        self._running: float | None = None
        self._phases: dict[int, Phases] = {}

    def launched(self, at: float) -> None:
        """The stage was submitted at ``at`` (wall clock)."""
        with self._lock:
            self._launched = at

    def worker_running(self, worker: int, phases: Phases, at: float, *, all_running: bool) -> None:
        """``worker`` reported ``Running`` at ``at`` with its ``phases``."""
        with self._lock:
            self._phases[worker] = tuple(phases)
            if all_running and self._running is None:
                self._running = at

    @property
    def launched_at(self) -> float | None:
        with self._lock:
            return self._launched

    @property
    def running_at(self) -> float | None:
        with self._lock:
            return self._running

    @property
    def seconds(self) -> float | None:
        """Submit → every worker running; ``None`` until then."""
        with self._lock:
            if self._launched is None or self._running is None:
                return None
            return self._running - self._launched

    @property
    def phases(self) -> dict[int, Phases]:
        """Each running worker's phases, by worker index."""
        with self._lock:
            return dict(self._phases)

    def slowest_phases(self) -> dict[str, float]:
        """Per phase, seconds after submit at which the *last* worker finished it, in order."""
        with self._lock:
            launched = self._launched
            per_worker = list(self._phases.values())
        if launched is None:
            return {}
        latest: dict[str, float] = {}
        for phases in per_worker:
            for name, t in phases:
                latest[name] = max(latest.get(name, t - launched), t - launched)
        return dict(sorted(latest.items(), key=lambda kv: kv[1]))
