"""The Spark driver: a job driver whose attempts are Spark barrier stages.

:class:`SparkDriver` wires together the parts of docs/architecture.md, 'Execution on Spark':

1. load the pipeline (:mod:`~barrier_runtime.spark.pipeline`) and plan it for
   P slices; open the checkpoint store and check that it can be used
   (:mod:`~barrier_runtime.storage.preflight`: seconds, before Spark starts);
2. start the coordinator server that workers connect back to
   (:mod:`~barrier_runtime.spark.coordinator_server`) and, if configured, the
   control API (:class:`~barrier_runtime.control.server.ControlServer`);
3. run the shared restart loop with an
   :class:`~barrier_runtime.driver.restart.ExponentialDelayRestartPolicy`; each
   attempt is one barrier stage of P workers
   (:mod:`~barrier_runtime.spark.stage`), restored from the latest completed
   checkpoint (ids keep increasing across attempts and driver restarts:
   the coordinator starts at the highest id in the store + 1).

The Spark session is created lazily from :attr:`SparkJobSpec.master` unless
one is passed in (tests share one per module), and a different
:class:`~barrier_runtime.spark.attempt.StageLauncher` can replace Spark
entirely (the tests' ``barrier_runtime_testing.spark.ThreadStageLauncher`` runs workers on
threads; it lives in ``tests/support``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from barrier_runtime import job_document
from barrier_runtime.api import dataflow
from barrier_runtime.core import faults, metadata, types
from barrier_runtime.core.clock import Clock, SystemClock
from barrier_runtime.driver import attempts, job_driver, restart
from barrier_runtime.driver import restore as restore_mod
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.spark import attempt as attempt_mod
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import coordinator_server, pipeline
from barrier_runtime.storage import checkpoint_store, preflight

log = logging.getLogger(__name__)

DEFAULT_STOP_GRACE_PERIOD = job_document.DEFAULT_GRACE_PERIOD


@dataclass(frozen=True, slots=True)
class RestartSettings:
    """The driver's restart strategy (``restartPolicy`` of the job configuration)."""

    max_restarts: int = 10
    window: float = 3600.0
    backoff: restart.Backoff = field(
        default_factory=lambda: restart.Backoff(initial=1.0, max=60.0, multiplier=2.0, jitter=0.2)
    )
    reset_after: float = 600.0
    attempts_per_record: int = job_driver.DEFAULT_ATTEMPTS_PER_RECORD
    prior_failures: tuple[float, ...] = ()
    """Failures of earlier drivers of this job (epoch seconds), counted in the window."""

    def policy(self) -> restart.ExponentialDelayRestartPolicy:
        return restart.ExponentialDelayRestartPolicy(
            max_restarts=self.max_restarts,
            window=self.window,
            backoff=self.backoff,
            reset_after=self.reset_after,
            prior_failures=self.prior_failures,
        )


@dataclass(frozen=True, slots=True)
class ControlSettings:
    """Where the control API listens and the bearer token it wants (``None``: no auth)."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    namespace: str | None = None
    job_name: str | None = None


@dataclass(frozen=True, slots=True)
class SparkJobSpec:
    """Everything ``cjob run`` / ``cjob driver`` decide about a job."""

    pipeline: pipeline.PipelineRef
    parallelism: int
    store: config_mod.StoreRef
    checkpoint: types.CheckpointConfig = field(default_factory=types.CheckpointConfig)
    master: str | None = None
    """Spark master URL; default ``local[parallelism]``."""
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    restart: RestartSettings = RestartSettings()
    restore_from: int | str | None = None
    allow_fresh_start: bool = False
    control: ControlSettings | None = None
    coordinator_bind: str = "127.0.0.1"
    coordinator_port: int = 0
    coordinator_host: str | None = None
    """The address workers use to reach the coordinator (default: ``coordinator_bind``)."""
    worker_host: str | None = None
    channel_capacity: int = 8
    crashes: tuple[faults.Crash, ...] = ()
    """Test crash plan, injected inside the workers (each crash in the attempt it names)."""
    tick_interval: float = 0.01
    stop_grace_period: float = DEFAULT_STOP_GRACE_PERIOD
    """Seconds from SIGTERM to SIGKILL (the pod's ``terminationGracePeriodSeconds``): the
    final savepoint of a graceful stop must complete within it, less a margin."""

    @property
    def effective_master(self) -> str:
        return self.master or f"local[{self.parallelism}]"


def open_checked_store(spec: SparkJobSpec) -> checkpoint_store.CheckpointStore:
    """The job's checkpoint store, checked to be usable (seconds, before Spark starts)."""
    store = spec.store.open()
    preflight.check_usable(store, restore_from=spec.restore_from)
    return store


class RemoteAttemptRunner:
    """Creates :class:`~.attempt.RemoteAttempt` objects for a :class:`~.job_driver.JobDriver`."""

    def __init__(
        self,
        plan: plan_mod.ExecutionPlan,
        *,
        worker_config: config_mod.WorkerConfig,
        launcher: attempt_mod.StageLauncher,
        server: coordinator_server.CoordinatorServer,
    ) -> None:
        self.plan = plan
        self.worker_config = worker_config
        self.launcher = launcher
        self.server = server
        self.current: attempt_mod.RemoteAttempt | None = None

    def create(
        self,
        number: int,
        restore_point: metadata.CheckpointMetadata | None,
        acknowledge: attempts.Acknowledge,
        decline: attempts.Decline,
    ) -> attempt_mod.RemoteAttempt:
        attempt = attempt_mod.RemoteAttempt(
            number,
            plan=self.plan,
            worker_config=dataclasses.replace(
                self.worker_config,
                restore_point=restore_point,
                crashes=faults.crashes_for(self.worker_config.crashes, number),
            ),
            launcher=self.launcher,
            server=self.server,
            acknowledge=acknowledge,
            decline=decline,
        )
        self.current = attempt
        return attempt


class SparkDriver:
    """Runs one job on Spark until its sources end, it is stopped, or its restarts run out."""

    def __init__(
        self,
        spec: SparkJobSpec,
        *,
        session: Any | None = None,
        launcher: attempt_mod.StageLauncher | None = None,
        clock: Clock | None = None,
        flow: dataflow.Dataflow | None = None,
        store: checkpoint_store.CheckpointStore | None = None,
        on_control: Callable[[str], None] | None = None,
        restore: restore_mod.Decided | None = None,
    ) -> None:
        """``flow``: the pipeline's dataflow if the caller loaded it already; ``store``: the
        job's store if the caller opened and checked it already (:func:`open_checked_store`);
        ``on_control``: told the control API's URL once it listens, before the job starts;
        ``restore``: what the first attempt restores, if the caller chose it already."""
        self.spec = spec
        self._on_control = on_control
        # Step 1
        flow = flow if flow is not None else pipeline.load_flow(spec.pipeline)
        self.plan = plan_mod.plan(flow, spec.parallelism)
        self.store = store if store is not None else open_checked_store(spec)
        self._session = session
        self._own_session = False
        if launcher is None:
            launcher = self._spark_launcher()
        # Step 2
        self.server = coordinator_server.CoordinatorServer(
            spec.coordinator_bind, spec.coordinator_port, spec.coordinator_host
        )
        self.runner = RemoteAttemptRunner(
            self.plan,
            worker_config=config_mod.WorkerConfig(
                attempt=0,
                secret=b"",
                driver_address=self.server.address,
                pipeline=spec.pipeline,
                parallelism=spec.parallelism,
                fingerprint=self.plan.fingerprint(),
                checkpoint=spec.checkpoint,
                store=spec.store,
                restore_point=None,
                channel_capacity=spec.channel_capacity,
                host=spec.worker_host,
                crashes=spec.crashes,
            ),
            launcher=launcher,
            server=self.server,
        )
        # Step 3
        self.job = job_driver.JobDriver(
            self.plan,
            runner=self.runner,
            store=self.store,
            config=spec.checkpoint,
            clock=clock or SystemClock(),
            restart_policy=spec.restart.policy(),
            restore_from=spec.restore_from,
            allow_fresh_start=spec.allow_fresh_start,
            attempts_per_record=spec.restart.attempts_per_record,
            tick_interval=spec.tick_interval,
            first_restore=restore,
        )
        self.control_url: str | None = None

    def _spark_launcher(self) -> attempt_mod.StageLauncher:
        from barrier_runtime.spark import session as session_mod  # noqa: PLC0415 (pyspark)
        from barrier_runtime.spark import stage  # noqa: PLC0415 (pyspark)

        if self._session is None:
            self._session = session_mod.build_session(
                self.spec.effective_master,
                app_name=f"cjob-{self.plan.flow.name}",
                parallelism=self.spec.parallelism,
                conf={
                    **session_mod.state_backend_conf(self.spec.checkpoint.state_backend),
                    **self.spec.spark_conf,
                },
            )
            self._own_session = True
        return stage.SparkStageLauncher(self._session)

    def worker_pids(self) -> dict[int, int]:
        """Process ids of the current attempt's workers (test hook; empty between attempts)."""
        current = self.runner.current
        return {} if current is None else current.worker_pids

    def run(self) -> job_driver.JobResult:
        """Run the job; :class:`~.job_driver.JobFailedError` when the restart budget is spent."""
        try:
            with self._control():
                return self.job.run()
        finally:
            self.close()

    def close(self) -> None:
        self.server.close()
        if self._own_session and self._session is not None:
            self._session.stop()
            self._session = None

    @contextlib.contextmanager
    def _control(self) -> Iterator[None]:
        settings = self.spec.control
        if settings is None:
            yield
            return
        from barrier_runtime.control import server  # noqa: PLC0415 (needs prometheus-client)

        control = server.ControlServer(
            self.job,
            host=settings.host,
            port=settings.port,
            token=settings.token,
            store_describe=self.store.describe(),
            namespace=settings.namespace,
            job_name=settings.job_name,
        )
        with control:
            self.control_url = control.url
            if self._on_control is not None:
                self._on_control(control.url)
            yield
