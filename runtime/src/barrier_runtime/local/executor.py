"""The in-process executor: runs a dataflow on P slices of threads, with real checkpoints.

It plays the driver's role in one process: it plans the dataflow and runs
the shared restart loop of :class:`~barrier_runtime.driver.job_driver.JobDriver`
(restore point, re-commit, attempt, final checkpoint, restart) with attempts
hosted on threads (:mod:`barrier_runtime.local.runner`). It uses the same
barrier handlers, coordinator, state and checkpoint store as the distributed
runtime; only the channels are in-memory queues instead of TCP connections.
Its restart policy is simple: at most ``max_restarts`` restarts in total, each
after ``restart_backoff`` seconds.
"""

from __future__ import annotations

from barrier_runtime.api import dataflow
from barrier_runtime.core import faults, types
from barrier_runtime.core.clock import Clock, SystemClock
from barrier_runtime.driver import job_driver, restart
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.local import runner
from barrier_runtime.storage import checkpoint_store

JobFailedError = job_driver.JobFailedError
JobResult = job_driver.JobResult

__all__ = ["JobFailedError", "JobResult", "LocalExecutor"]


class LocalExecutor(job_driver.JobDriver):
    """Runs ``flow`` with ``parallelism`` slices until its sources are exhausted."""

    def __init__(
        self,
        flow: dataflow.Dataflow,
        *,
        parallelism: int,
        store: checkpoint_store.CheckpointStore,
        config: types.CheckpointConfig | None = None,
        clock: Clock | None = None,
        fault_injector: faults.FaultInjector | None = None,
        max_restarts: int = 10,
        restart_backoff: float = 0.0,
        channel_capacity: int = 8,
        restore_from: int | str | None = None,
        allow_fresh_start: bool = False,
        attempts_per_record: int = job_driver.DEFAULT_ATTEMPTS_PER_RECORD,
        tick_interval: float = 0.005,
    ) -> None:
        plan = plan_mod.plan(flow, parallelism)
        config = config or types.CheckpointConfig()
        clock = clock or SystemClock()
        injector = fault_injector or faults.FaultInjector()
        self.max_restarts = max_restarts
        self.restart_backoff = restart_backoff
        self.channel_capacity = channel_capacity
        super().__init__(
            plan,
            runner=runner.LocalAttemptRunner(
                plan,
                config=config,
                clock=clock,
                store=store,
                fault_injector=injector,
                channel_capacity=channel_capacity,
            ),
            store=store,
            config=config,
            clock=clock,
            restart_policy=restart.FixedDelayRestartPolicy(max_restarts, restart_backoff),
            fault_injector=injector,
            restore_from=restore_from,
            allow_fresh_start=allow_fresh_start,
            attempts_per_record=attempts_per_record,
            tick_interval=tick_interval,
        )
