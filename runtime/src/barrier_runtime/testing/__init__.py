"""Public test helpers for your own pipeline tests: run in-process with faults, check exactly-once.

The one testing surface the runtime ships (the runtime's own test doubles and
harnesses live in the repository's ``tests/support``, not in the wheel):

* :class:`LocalExecutor` runs a dataflow with P slices on threads, with the
  real barrier handlers, coordinator, checkpoint store and restart loop;
* :class:`FaultInjector` and :class:`Crash` crash it at chosen points of the
  checkpoint life cycle (:class:`FaultPoint`), raising :class:`InjectedFault`;
* :class:`TestingSource` takes ``TestingSource.ABORT()`` sentinels as data
  (crash once when read, pass on replay: :class:`InjectedAbort`);
  :class:`TestingSink` is a two-phase-commit sink that keeps committed output
  in memory (:mod:`~barrier_runtime.testing.connectors`);
* :func:`check_exactly_once` counts lost, duplicated and re-ordered records
  against a crash-free run (:mod:`~barrier_runtime.testing.exactly_once`).

A pipeline that crashes once in the middle of its input, restarts from its
last checkpoint and still delivers every record exactly once:

>>> import tempfile
>>> from barrier_runtime.api import Dataflow
>>> from barrier_runtime.core.types import CheckpointConfig
>>> from barrier_runtime.storage.checkpoint_store import CheckpointStore
>>> from barrier_runtime.storage.object_store import open_object_store
>>> events = [{"key": k, "seq": s} for s in range(3) for k in "ab"]
>>> sink = TestingSink()
>>> flow = Dataflow("copy")
>>> flow.source("events", TestingSource([*events[:3], TestingSource.ABORT(), *events[3:]])) \\
...     .sink("out", sink)
>>> store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "tests/copy")
>>> result = LocalExecutor(
...     flow, parallelism=1, store=store, config=CheckpointConfig(interval=0.01)
... ).run()
>>> result.restarts, check_exactly_once(events, sink.output).exactly_once
(1, True)

A crash planned as data instead, while the sink commits its first checkpoint:

>>> sink = TestingSink()
>>> flow = Dataflow("copy")
>>> flow.source("events", TestingSource(events)).sink("out", sink)
>>> store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "tests/copy")
>>> faults = FaultInjector([Crash(FaultPoint.COMMIT, checkpoint_id=1)])
>>> result = LocalExecutor(flow, parallelism=1, store=store, fault_injector=faults).run()
>>> result.restarts, check_exactly_once(events, sink.output).exactly_once
(1, True)
"""

from barrier_runtime.core.faults import Crash, FaultInjector, FaultPoint, InjectedFault
from barrier_runtime.local.executor import JobFailedError, JobResult, LocalExecutor
from barrier_runtime.testing.connectors import InjectedAbort, TestingSink, TestingSource
from barrier_runtime.testing.exactly_once import CheckReport, check_exactly_once

__all__ = [
    "CheckReport",
    "Crash",
    "FaultInjector",
    "FaultPoint",
    "InjectedAbort",
    "InjectedFault",
    "JobFailedError",
    "JobResult",
    "LocalExecutor",
    "TestingSink",
    "TestingSource",
    "check_exactly_once",
]
