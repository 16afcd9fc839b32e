"""One worker of an attempt: hosts subtask *i* of every task, talks to the driver and its peers.

A worker is one Spark barrier task (see :mod:`~barrier_runtime.spark.stage`),
but nothing here imports Spark: the task passes its index (and the peer
listener it bound first) in, so tests can run workers on threads.

Life of a worker (numbered as in the code):

1. Listen for peers (unless the task did already,
   :mod:`~barrier_runtime.spark.rendezvous`), connect to the driver's
   coordinator and say ``Hello`` with that address (signed with the
   attempt's key: a worker of an older attempt is refused).
2. Load the pipeline from its reference, plan it, and check the plan's
   fingerprint against the driver's; open the checkpoint store; settle
   pyarrow's lazy imports (:mod:`~barrier_runtime.core.arrow_imports`).
3. Wait for the driver's ``Peers`` (every worker's address, sent once all
   said ``Hello``), build the
   :class:`~barrier_runtime.channels.WorkerNetwork` on the listener and
   connect to every peer.
4. Build the slice's subtasks — in-memory channels between them, network
   channels to other slices — start them, and report ``Running`` with the
   times its start-up phases ended.
5. Until a ``Shutdown`` arrives and the subtasks have left: forward the
   driver's messages to the subtasks; send acknowledgements, declines,
   finished tasks and, periodically, metrics.
6. Leave: on success close the network gracefully and say ``Bye``; on a
   failure say ``Failed`` (if the driver is still there), drop everything and
   raise :class:`WorkerFailedError`, which fails the Spark task and with it
   the whole barrier stage.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.channels import errors as channel_errors
from barrier_runtime.channels import network as network_mod
from barrier_runtime.core import arrow_imports, faults, metadata, task_messages, types
from barrier_runtime.core.clock import SystemClock
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import gc_pacing, messages, pipeline, rendezvous, slice_host, wire
from barrier_runtime.storage import checkpoint_store
from barrier_runtime.task import attempt as attempt_mod
from barrier_runtime.task import metrics as subtask_counters
from barrier_runtime.task import subtask as subtask_mod

log = logging.getLogger(__name__)

Phases = Sequence[tuple[str, float]]
"""Start-up phases and the wall-clock time each ended, in order."""
_JOIN_TIMEOUT = 30.0
_PEERS_GRACE = 10.0
"""Seconds a worker waits for the peers beyond the driver's rendezvous timeout."""
LOG_LEVEL_ENV = "CJOB_WORKER_LOG_LEVEL"
"""Log level of worker processes (default WARNING); ``cjob`` sets it from its own verbosity."""


class WorkerFailedError(RuntimeError):
    """The worker's slice failed; the message names the subtask and the cause."""


listen_host = rendezvous.listen_host


def run_worker(
    config: config_mod.WorkerConfig,
    index: int,
    peers: rendezvous.PeerListener | None = None,
    startup: Phases = (),
) -> dict[str, Any]:
    """Run worker ``index`` of ``config``'s attempt to the end; return a small summary.

    ``peers``: the peer listener, when the task bound it early
    (:mod:`~barrier_runtime.spark.rendezvous`); ``startup``: phases the task
    went through before (reported with ``Running``).
    """
    with gc_pacing.paced():
        return Worker(config, index).run(peers, startup)


def configure_process_logging(index: int) -> None:
    """A worker *process* logs to stderr at ``$CJOB_WORKER_LOG_LEVEL`` (default WARNING).

    Only for a process of its own (a Spark task): workers on threads share the
    caller's logging and must not change it.
    """
    level = os.environ.get(LOG_LEVEL_ENV, "WARNING").upper()
    logging.basicConfig(format=f"%(asctime)s %(levelname)s worker {index} %(name)s: %(message)s")
    logging.getLogger("barrier_runtime").setLevel(
        level if level in logging.getLevelNamesMapping() else logging.WARNING
    )


class Worker:
    def __init__(self, config: config_mod.WorkerConfig, index: int) -> None:
        self.config = config
        self.index = index
        self.host = listen_host(config.host)
        self._shutdown = threading.Event()
        self._driver_lost: str | None = None

    def run(
        self, peers: rendezvous.PeerListener | None = None, startup: Phases = ()
    ) -> dict[str, Any]:
        cfg = self.config
        phases = list(startup)
        # Step 1
        peers = peers or rendezvous.PeerListener(self.host, cfg.parallelism)
        link = self._hello(peers, phases)
        net: network_mod.WorkerNetwork | None = None
        ctx: attempt_mod.AttemptContext | None = None
        running: slice_host.Running | None = None
        try:
            # Step 2
            plan, store = self._load(phases)
            # Step 3
            net = self._join_peers(link, peers, phases)
            # Step 4
            ctx = self._context(plan, store, link)
            subtasks = attempt_mod.build_subtasks(
                ctx,
                cfg.channel_capacity,
                hosted_slice=self.index,
                remote=slice_host.NetworkChannels(net),
            )
            net.wait_for_peers(timeout=cfg.connect_timeout)
            phases.append(("connected", time.time()))
            running = slice_host.Running(subtasks, ctx, cfg.attempt)
            phases.append(("running", time.time()))
            running.wait_restored(subtasks)
            phases.append(("restored", time.time()))
            link.send(messages.Running(tuple(phases)))
            # Step 5
            reader = threading.Thread(
                target=self._read_driver,
                args=(link, ctx, subtasks, net),
                daemon=True,
                name=f"cjob-worker-{self.index}-driver",
            )
            reader.start()
            self._supervise(ctx, link, subtasks, running)
            # Step 6
            net.close()
            link.send(messages.Bye(subtask_counters.subtask_metrics(subtasks)))
            return {"worker": self.index, "pid": os.getpid(), "attempt": cfg.attempt}
        except BaseException as exc:
            failure = self._failure(exc, ctx)
            log.info("worker %d of attempt %d failed: %s", self.index, cfg.attempt, failure)
            if self._driver_lost is None:  # report before peers see our channels close
                task = None if ctx is None else ctx.failed_task
                cause = _cause(exc, ctx)
                secondary = isinstance(cause, _CONSEQUENCES)
                report = task_failure.describe(cause)
                try:
                    link.send(messages.Failed(task, failure, secondary, report))
                except Exception as send_exc:
                    log.warning("worker %d could not report: %r", self.index, send_exc)
            if net is not None:
                net.abort()
            raise WorkerFailedError(f"worker {self.index}: {failure}") from exc
        finally:
            if ctx is not None:
                ctx.stop()
                for t in [] if running is None else running.threads:
                    t.join(_JOIN_TIMEOUT)
                ctx.close()
            if net is None:
                peers.close()
            link.close()

    def _hello(
        self, peers: rendezvous.PeerListener, phases: list[tuple[str, float]]
    ) -> wire.FramedConnection:
        """Step 1: say ``Hello`` to the driver with the peer address (close the listener if not)."""
        try:
            link = _connect(self.config, self.index, self.host, peers.address)
        except BaseException:
            peers.close()
            raise
        phases.append(("hello", time.time()))
        return link

    def _load(
        self, phases: list[tuple[str, float]]
    ) -> tuple[plan_mod.ExecutionPlan, checkpoint_store.CheckpointStore]:
        """Step 2: the planned pipeline and the opened checkpoint store."""
        plan = self._plan()
        phases.append(("pipeline", time.time()))
        store = self.config.store.open()
        arrow_imports.settle()
        phases.append(("store", time.time()))
        return plan, store

    def _join_peers(
        self,
        link: wire.FramedConnection,
        peers: rendezvous.PeerListener,
        phases: list[tuple[str, float]],
    ) -> network_mod.WorkerNetwork:
        """Step 3: the network on the peer listener, connected to the addresses the driver sent."""
        cfg = self.config
        token = wire.derive_key(cfg.secret, "data-plane").hex()
        net = network_mod.WorkerNetwork(
            self.index, cfg.parallelism, token, host=peers.host, listener=peers.listener
        )
        try:
            addresses = _await_peers(link, cfg)
            phases.append(("peers", time.time()))
            net.connect(dict(enumerate(addresses)), timeout=cfg.connect_timeout)
        except BaseException:
            net.abort()
            raise
        return net

    def _plan(self) -> plan_mod.ExecutionPlan:
        cfg = self.config
        plan = plan_mod.plan(pipeline.load_flow(cfg.pipeline), cfg.parallelism)
        if plan.fingerprint() != cfg.fingerprint:
            raise pipeline.InvalidPipelineError(
                f"the pipeline {cfg.pipeline.describe()} loaded on worker {self.index} "
                f"differs from the driver's ({plan.fingerprint()} != {cfg.fingerprint}): "
                "deploy the same pipeline code to the driver and the executors"
            )
        return plan

    def _context(
        self,
        plan: plan_mod.ExecutionPlan,
        store: checkpoint_store.CheckpointStore,
        link: wire.FramedConnection,
    ) -> attempt_mod.AttemptContext:
        cfg = self.config

        def decline(
            cid: types.CheckpointId, task: metadata.TaskKey, reason: types.FailureReason
        ) -> None:
            link.send(messages.Decline(cid, task, reason))

        return attempt_mod.AttemptContext(
            plan=plan,
            config=cfg.checkpoint,
            clock=SystemClock(),
            store=store,
            fault_injector=faults.FaultInjector(list(cfg.crashes)),
            attempt=cfg.attempt,
            restore_point=cfg.restore_point,
            acknowledge=lambda ack: link.send(messages.Ack(ack)),
            decline=decline,
            tasks=[k for k in plan.task_keys() if k.subtask == self.index],
            on_task_finished=lambda task: link.send(messages.TaskFinished(task)),
        )

    def _read_driver(
        self,
        link: wire.FramedConnection,
        ctx: attempt_mod.AttemptContext,
        subtasks: list[subtask_mod.Subtask],
        net: network_mod.WorkerNetwork,
    ) -> None:
        reason = "the driver closed the connection"
        try:
            while (frame := link.receive()) is not None:
                if not isinstance(frame, messages.Post):
                    continue
                if isinstance(frame.message, task_messages.Shutdown):
                    self._shutdown.set()
                    net.expect_close()  # peers whose subtasks leave first close theirs
                for s in subtasks:
                    s.post(frame.message)
                if self._shutdown.is_set():
                    ctx.wake()
        except (OSError, EOFError, wire.AuthenticationError) as exc:
            reason = f"lost the driver: {exc}"
        if not self._shutdown.is_set():
            self._driver_lost = reason
            ctx.fail(DriverLostError(reason))

    def _supervise(
        self,
        ctx: attempt_mod.AttemptContext,
        link: wire.FramedConnection,
        subtasks: list[subtask_mod.Subtask],
        running: slice_host.Running,
    ) -> None:
        """Step 5: report metrics until the subtasks left after a Shutdown, or fail."""

        def failed() -> bool:
            return ctx.failure is not None or (
                ctx.stopping.is_set() and not self._shutdown.is_set()
            )

        def done() -> bool:
            return self._shutdown.is_set() and running.all_left

        while True:
            with ctx.changed:
                ctx.changed.wait_for(lambda: failed() or done(), self.config.metrics_interval)
            if failed():
                raise ctx.failure or DriverLostError(self._driver_lost or "stopped")
            if done():
                return
            link.send(messages.Metrics(subtask_counters.subtask_metrics(subtasks)))

    def _failure(self, exc: BaseException, ctx: attempt_mod.AttemptContext | None) -> str:
        cause = _cause(exc, ctx)
        where = f" in {ctx.failed_task}" if ctx is not None and ctx.failed_task else ""
        return f"{type(cause).__name__}{where}: {cause}"


def _cause(exc: BaseException, ctx: attempt_mod.AttemptContext | None) -> BaseException:
    return ctx.failure if ctx is not None and ctx.failure is not None else exc


class RendezvousFailedError(RuntimeError):
    """The driver never sent the peers' addresses: another worker failed or never came."""


def _await_peers(link: wire.FramedConnection, cfg: config_mod.WorkerConfig) -> list[str]:
    """Step 3: the driver's ``Peers`` (its first message), within ``connect_timeout``.

    The driver sends it once every worker of the attempt said ``Hello``; if one
    never does, the driver fails the attempt (its rendezvous timeout, counted
    from the first ``Hello``) and closes this connection, which ends the wait
    here. The worker's own limit is longer, so that the driver's error, which
    names the missing workers, is the one reported.
    """
    limit = cfg.connect_timeout + _PEERS_GRACE
    link.sock.settimeout(limit)
    try:
        frame = link.receive()
    except (OSError, EOFError, wire.AuthenticationError) as exc:
        raise RendezvousFailedError(
            f"no peer addresses from the driver within {limit:g}s: {exc}"
        ) from exc
    link.sock.settimeout(None)
    if frame is None:
        raise RendezvousFailedError(
            "the driver closed the connection before every worker of the attempt registered"
        )
    if not isinstance(frame, messages.Peers) or frame.attempt != cfg.attempt:
        raise RendezvousFailedError(f"expected the peers of attempt {cfg.attempt}, got {frame!r}")
    if len(frame.addresses) != cfg.parallelism:
        raise RendezvousFailedError(
            f"the driver sent {len(frame.addresses)} peer addresses for {cfg.parallelism} workers"
        )
    return list(frame.addresses)


_CONSEQUENCES = (channel_errors.ChannelClosedError, RendezvousFailedError)
"""Failures caused by another worker's failure (reported as secondary)."""


class DriverLostError(ConnectionError):
    """The connection to the driver's coordinator ended before a Shutdown."""


def _connect(
    cfg: config_mod.WorkerConfig, index: int, host: str, peer_address: str
) -> wire.FramedConnection:
    driver_host, port = network_mod.parse_address(cfg.driver_address)
    sock = socket.create_connection((driver_host, port), timeout=cfg.connect_timeout)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    link = wire.connect_side(sock, wire.derive_key(cfg.secret, "control"))
    link.send(messages.Hello(cfg.attempt, index, os.getpid(), host, peer_address))
    return link
