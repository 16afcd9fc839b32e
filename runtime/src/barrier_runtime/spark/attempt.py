"""One attempt of a job on P remote workers, as the driver sees it.

:class:`RemoteAttempt` implements :class:`~barrier_runtime.driver.attempts.Attempt`
for workers launched by a :class:`StageLauncher` (a Spark barrier stage in
production, threads in tests) that connect back to the driver's
:class:`~barrier_runtime.spark.coordinator_server.CoordinatorServer`.

States: *launching* (stage submitted, workers connecting; once all P said
``Hello`` the attempt sends each the peers' addresses, see
:mod:`~barrier_runtime.spark.peer_registry`) → *ready* (every worker
reported ``Running``) → *shutting down* (``Shutdown`` posted, waiting
for every ``Bye`` and for the stage to end) or *stopping* (failed or torn
down: connections closed, which aborts the workers, and the stage
cancelled). The first failure wins: a worker's ``Failed`` report, a worker
connection that ends without ``Bye``, the stage ending on its own, or the
rendezvous timing out (checked in :meth:`RemoteAttempt.wait`).

Threading: connection threads deliver worker messages; the driver loop and
coordinator callbacks call the rest. One lock guards the fields and a
condition on it wakes :meth:`RemoteAttempt.wait`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from barrier_runtime import task_failure
from barrier_runtime.core import clock as clock_mod
from barrier_runtime.core import metadata, task_messages, task_metrics
from barrier_runtime.driver import attempts
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import coordinator_server, messages, peer_registry, startup, wire

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 60.0
STAGE_END_TIMEOUT = 60.0
ROOT_CAUSE_GRACE = 1.0
"""How long a failing attempt waits for a root cause when only consequences were reported."""


class WorkerLostError(RuntimeError):
    """A worker's connection to the driver ended before it said goodbye (it died or hung up)."""


class RemoteTaskError(RuntimeError):
    """A subtask failed on a worker; the message is the worker's report.

    ``task_failure`` carries the worker's classification, so the driver tells a
    poisoned record from a lost connection as it would in process.
    """

    def __init__(self, message: str, report: task_failure.TaskFailure | None = None) -> None:
        super().__init__(message)
        if report is not None:
            self.task_failure = report


class StageEndedError(RuntimeError):
    """The stage hosting the workers ended before the attempt did (e.g. Spark failed it)."""


class LaunchedStage(Protocol):
    def cancel(self) -> None:
        """Ask the cluster to kill the stage's tasks (idempotent)."""
        ...

    def join(self, timeout: float) -> bool:
        """Wait until the stage has ended; False on timeout."""
        ...


class StageLauncher(Protocol):
    def launch(
        self, config: config_mod.WorkerConfig, on_end: Callable[[BaseException | None], None]
    ) -> LaunchedStage:
        """Start ``config.parallelism`` workers; call ``on_end`` once the stage is over."""
        ...


class RemoteAttempt:
    """One attempt on remote workers; see the module essay."""

    def __init__(
        self,
        number: int,
        *,
        plan: plan_mod.ExecutionPlan,
        worker_config: config_mod.WorkerConfig,
        launcher: StageLauncher,
        server: coordinator_server.CoordinatorServer,
        acknowledge: attempts.Acknowledge,
        decline: attempts.Decline,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        self._number = number
        secret = os.urandom(32)
        self.key = wire.derive_key(secret, "control")
        self._config = replace(
            worker_config, attempt=number, secret=secret, driver_address=server.address
        )
        self._plan = plan
        self._parallelism = plan.parallelism
        self._all_tasks = frozenset(plan.task_keys())
        self._launcher = launcher
        self._server = server
        self._acknowledge = acknowledge
        self._decline = decline
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._conns: dict[int, wire.FramedConnection] = {}
        self._pids: dict[int, int] = {}
        self._running: set[int] = set()
        self._byes: set[int] = set()
        self._reported: set[int] = set()
        """Workers that reported their failure (their disconnect is no news)."""
        self._disconnected: set[int] = set()
        self._closing = False
        """The driver is closing the connections itself."""
        self._finished: set[metadata.TaskKey] = set()
        self._metrics: dict[int, task_metrics.AttemptMetrics] = {}
        self._failure: BaseException | None = None
        self._failed_task: metadata.TaskKey | None = None
        self._secondary = False
        self._stopping = False
        self._shutting_down = False
        self._stage: LaunchedStage | None = None
        self._stage_ended = threading.Event()
        self._peers = peer_registry.PeerRegistry(
            attempt=number,
            parallelism=self._parallelism,
            timeout=self._config.connect_timeout,
            clock=clock or clock_mod.SystemClock(),
        )
        self.startup = startup.StartupTimes()
        """Submit → every worker running, and each worker's start-up phases."""

    # -- the Attempt protocol -------------------------------------------------------------

    @property
    def number(self) -> int:
        return self._number

    @property
    def ready(self) -> bool:
        with self._lock:
            return len(self._running) == self._parallelism

    @property
    def stopping(self) -> bool:
        with self._lock:
            return self._stopping

    @property
    def all_finished(self) -> bool:
        with self._lock:
            return self._finished >= self._all_tasks

    @property
    def failure(self) -> BaseException | None:
        with self._lock:
            return self._failure

    @property
    def failed_task(self) -> metadata.TaskKey | None:
        with self._lock:
            return self._failed_task

    @property
    def worker_pids(self) -> dict[int, int]:
        """Process id of every connected worker, by worker index."""
        with self._lock:
            return dict(self._pids)

    def start(self) -> None:
        self._server.serve(self)
        self.startup.launched(time.time())
        self._stage = self._launcher.launch(self._config, self._stage_end)

    def wait(self, timeout: float) -> None:
        with self._changed:
            self._changed.wait(timeout)
            overdue = self._peers.overdue()
        if overdue is not None:
            self.fail(overdue)

    def wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def post_all(self, message: task_messages.ControlMessage) -> None:
        with self._lock:
            conns = dict(self._conns)
            complete = len(self._running) == self._parallelism and not self._stopping
        if not complete:
            raise RuntimeError(
                f"not every worker is running ({len(conns)} of {self._parallelism} connected)"
            )
        for worker, conn in sorted(conns.items()):
            try:
                conn.send(messages.Post(message))
            except OSError as exc:
                raise RuntimeError(f"worker {worker} is unreachable: {exc}") from exc

    def fail(
        self, exc: BaseException, task: metadata.TaskKey | None = None, *, secondary: bool = False
    ) -> None:
        """Record a failure and stop; a *secondary* one (a consequence) yields to a primary one.

        When a worker dies its peers fail too (their channels to it close) and
        Spark fails the stage; whichever report arrives first, the attempt's
        failure is the root cause if it arrives before the attempt is torn down.
        """
        with self._changed:
            if self._failure is None or (self._secondary and not secondary):
                self._failure = exc
                self._failed_task = task
                self._secondary = secondary
                log.info(
                    "attempt %d failed%s: %s", self._number, f" in {task}" if task else "", exc
                )
            self._stopping = True
            self._changed.notify_all()

    def shutdown(self) -> None:
        """Post ``Shutdown``; wait for every ``Bye`` and for the stage to end."""
        with self._lock:
            self._shutting_down = True
        try:
            self.post_all(task_messages.Shutdown())
        except RuntimeError as exc:
            self.fail(exc)
            return
        with self._changed:
            done = self._changed.wait_for(
                lambda: len(self._byes) == self._parallelism or self._stopping, SHUTDOWN_TIMEOUT
            )
        if not done:
            self.fail(TimeoutError(f"workers did not shut down in {SHUTDOWN_TIMEOUT:.0f}s"))
        if self._stage is not None and not self._stage.join(STAGE_END_TIMEOUT):
            self.fail(TimeoutError(f"the stage did not end in {STAGE_END_TIMEOUT:.0f}s"))

    def stop(self) -> None:
        """Abort the workers (close their connections), cancel the stage and wait for its end.

        If only secondary failures are known, wait up to ``ROOT_CAUSE_GRACE`` for
        the root cause first: every worker either reports or its connection ends.
        """
        with self._changed:
            self._stopping = True
            self._changed.wait_for(self._root_cause_known, ROOT_CAUSE_GRACE)
            self._closing = True
            conns = list(self._conns.values())
            self._changed.notify_all()
        self._server.serve(None)
        for conn in conns:
            conn.close()
        if self._stage is not None and not self._stage_ended.is_set():
            self._stage.cancel()
            if not self._stage.join(STAGE_END_TIMEOUT):
                log.warning("the stage of attempt %d did not end after cancelling", self._number)

    def _root_cause_known(self) -> bool:
        if self._failure is None or not self._secondary:
            return True
        heard = self._reported | self._disconnected | self._byes
        return all(w in heard for w in self._conns)

    def close(self) -> None:
        with self._lock:
            self._conns.clear()

    def metrics(self) -> task_metrics.AttemptMetrics:
        total = task_metrics.AttemptMetrics()
        with self._lock:
            per_worker = list(self._metrics.values())
        for m in per_worker:
            total.add(m)
        return total

    # -- coordinator server callbacks (connection threads) ------------------------------

    def worker_connected(self, hello: messages.Hello, conn: wire.FramedConnection) -> bool:
        with self._changed:
            if self._stopping:
                return False
            registration = self._peers.register(hello.attempt, hello.worker, hello.peer_address)
            if not registration.accepted:
                log.debug("attempt %d refused %s: %s", self._number, hello, registration.value)
                return False
            self._conns[hello.worker] = conn
            self._pids[hello.worker] = hello.pid
            peers = self._peers.addresses
            conns = dict(self._conns)
            self._changed.notify_all()
        log.debug(
            "worker %d (pid %d) connected for attempt %d", hello.worker, hello.pid, self._number
        )
        if registration is peer_registry.Registration.COMPLETED:
            assert peers is not None
            self._send_peers(conns, peers)
        return True

    def _send_peers(self, conns: dict[int, wire.FramedConnection], peers: tuple[str, ...]) -> None:
        """Every worker said ``Hello``: tell each of them all the addresses (once)."""
        for worker, conn in sorted(conns.items()):
            try:
                conn.send(messages.Peers(self._number, peers))
            except OSError as exc:  # its connection thread reports the loss
                log.debug("could not send the peers to worker %d: %s", worker, exc)

    def worker_message(self, worker: int, message: object) -> None:
        try:
            self._handle(worker, message)
        except Exception as exc:
            self.fail(exc)

    def _handle(self, worker: int, message: object) -> None:
        if isinstance(message, messages.Failed):  # even when stopping: it may be the root cause
            log.debug("worker %d of attempt %d reports %s", worker, self._number, message)
            with self._lock:
                self._reported.add(worker)
            self.fail(
                RemoteTaskError(message.error, message.report),
                message.task,
                secondary=message.secondary,
            )
        elif self.stopping:
            return
        elif isinstance(message, messages.Ack):
            self._acknowledge(message.ack)
        elif isinstance(message, messages.Decline):
            self._decline(message.checkpoint_id, message.task, message.reason)
        else:
            self._record(worker, message)

    def _record(self, worker: int, message: object) -> None:
        with self._changed:
            if isinstance(message, messages.Running):
                self._running.add(worker)
                all_running = len(self._running) == self._parallelism
                self.startup.worker_running(
                    worker, message.startup, time.time(), all_running=all_running
                )
            elif isinstance(message, messages.TaskFinished):
                self._finished.add(message.task)
            elif isinstance(message, messages.Metrics):
                self._metrics[worker] = message.metrics
            elif isinstance(message, messages.Bye):
                self._metrics[worker] = message.metrics
                self._byes.add(worker)
            self._changed.notify_all()

    def worker_disconnected(self, worker: int, reason: str) -> None:
        with self._changed:
            self._disconnected.add(worker)
            expected = worker in self._byes or worker in self._reported or self._closing
            pid = self._pids.get(worker)
            self._changed.notify_all()
        log.debug(
            "worker %d of attempt %d disconnected (%s); expected=%s",
            worker,
            self._number,
            reason,
            expected,
        )
        if not expected:
            self.fail(
                WorkerLostError(f"worker {worker} (pid {pid}) lost its driver connection: {reason}")
            )

    def _stage_end(self, error: BaseException | None) -> None:
        self._stage_ended.set()
        with self._lock:
            shutting_down = self._shutting_down
        if error is not None:
            self.fail(StageEndedError(f"the stage failed: {error}"), secondary=True)
        elif not shutting_down:  # else shutdown() checks that every worker said goodbye
            self.fail(StageEndedError("the stage ended before the attempt did"), secondary=True)
        self.wake()
