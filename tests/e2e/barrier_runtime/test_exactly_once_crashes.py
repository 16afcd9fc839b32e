"""Exactly-once under injected crashes, one test body on every host that runs tasks.

The job is the keyed running count (``barrier_runtime.demo``) over generated
events with per-key sequence numbers, P = 3. Crashes are injected at every
point of the checkpoint life cycle (while processing, during the synchronous
snapshot, during the asynchronous upload, during restore and during the
sinks' commit), and the checker compares the published output with a
failure-free run of the same job: lost = duplicated = out-of-order = 0.

The hosts:

* ``local``: the in-process host (``LocalExecutor``, subtasks on threads);
* ``threads``: the Spark driver with its workers on threads of this process
  (``ThreadStageLauncher``): the coordinator server, rendezvous and network
  channels between workers over real TCP, the restart loop, without Java;
* ``spark``: real Spark in local mode (``local[3]``), for a reduced plan since
  every attempt is a new barrier stage (slow).

Plus, in-process: at-least-once loses nothing, and a guard that the checker
does catch duplicates.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from barrier_runtime_testing import spark as spark_testing

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import (
    CheckpointConfig,
    CheckpointingMode,
    StateBackend,
    StateBackendKind,
)
from barrier_runtime.demo import expected_output, running_count_flow
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import config, driver, pipeline
from barrier_runtime.state import disk_copies
from barrier_runtime.storage import local_copies
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    TestingSink,
    check_exactly_once,
)

P = FaultPoint
PARALLELISM = 3
PIPELINE = str(
    pathlib.Path(__file__).parents[2]
    / "integration/barrier_runtime/spark/running_count_pipeline.py"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Job:
    """The running count's shape (``running_count_flow`` / ``running_count_pipeline.py``)."""

    keys: int
    events_per_key: int
    partitions: int
    batch_size: int
    rate_per_partition: float | None = None

    def flow_kwargs(self, *, paced: bool = True) -> dict[str, Any]:
        shape = dataclasses.asdict(self)
        if not paced:
            shape["rate_per_partition"] = None
        return shape

    def pipeline_args(self, out: str) -> list[str]:
        args = [
            *("--out", out, "--keys", str(self.keys)),
            *("--events-per-key", str(self.events_per_key)),
            *("--partitions", str(self.partitions), "--batch-size", str(self.batch_size)),
        ]
        if self.rate_per_partition:
            args += ["--rate", str(self.rate_per_partition * self.partitions)]
        return args


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    """A crash plan on a host, and what its result must show beyond exactly-once."""

    host: str
    job: Job
    plan: tuple[Crash, ...]
    unaligned: bool = False
    incremental: bool = False
    disk: bool = False
    """Keyed state in the on-disk backend (RocksDB) instead of memory."""
    min_fired: int = 0
    """Crashes that must fire (attempt filters can leave a late one nothing to hit)."""
    min_checkpoints: int = 1
    every_restart_restores: bool = False
    """Every attempt after the first restored a checkpoint (none started from scratch)."""

    @property
    def id(self) -> str:
        kind = "unaligned" if self.unaligned else "aligned"
        return (
            f"{self.host}-{kind}{'-incremental' if self.incremental else ''}"
            f"{'-disk' if self.disk else ''}"
        )

    def checkpoints(self, interval: float, **more: Any) -> CheckpointConfig:
        backend = StateBackend(StateBackendKind.DISK if self.disk else StateBackendKind.MEMORY)
        return CheckpointConfig(
            interval=interval,
            unaligned=self.unaligned,
            incremental=self.incremental,
            state_backend=backend,
            **more,
        )


LARGE = Job(keys=500, events_per_key=400, partitions=6, batch_size=200, rate_per_partition=8000)
SMALL = Job(keys=100, events_per_key=300, partitions=6, batch_size=100, rate_per_partition=2000)

# Spread over the life cycle; the attempt filters make them land in different attempts.
EVERYWHERE = (
    Crash(P.PROCESSING, subtask=0, after_records=15_000),
    Crash(P.SNAPSHOT, task="count", checkpoint_id=3),
    Crash(P.UPLOAD, task="count", checkpoint_id=5),
    Crash(P.RESTORE, attempt=3),
    Crash(P.COMMIT, checkpoint_id=7),
    Crash(P.PROCESSING, subtask=2, after_records=8_000, attempt=5),
    Crash(P.SNAPSHOT, task="events", checkpoint_id=10),
    Crash(P.UPLOAD, task="events", checkpoint_id=12),
    Crash(P.COMMIT, checkpoint_id=14),
    Crash(P.RESTORE, attempt=9),
    Crash(P.PROCESSING, subtask=1, after_records=5_000, attempt=10),
    Crash(P.SNAPSHOT, task="count", checkpoint_id=18),
)
# Inside the workers: each crash in one worker of the attempt it names.
INSIDE_WORKERS = (
    Crash(P.PROCESSING, subtask=0, after_records=3_000),
    Crash(P.SNAPSHOT, task="count", subtask=1, checkpoint_id=3, attempt=1),
    Crash(P.UPLOAD, task="count", subtask=2, checkpoint_id=5, attempt=2),
    Crash(P.RESTORE, subtask=1, attempt=3),
    Crash(P.COMMIT, subtask=0, checkpoint_id=7, attempt=4),
)
# Real Spark: every attempt is a new barrier stage, so three crashes, one per attempt.
ON_SPARK = (
    Crash(P.PROCESSING, subtask=0, after_records=6_000),
    Crash(P.RESTORE, subtask=1, attempt=1),
    Crash(P.COMMIT, subtask=2, attempt=2),
)

CASES = [
    *(
        Case("local", LARGE, EVERYWHERE, unaligned, incremental, min_fired=10, min_checkpoints=8)
        for incremental in (False, True)
        for unaligned in (False, True)
    ),
    *(
        Case(
            "local",
            LARGE,
            EVERYWHERE,
            unaligned,
            incremental,
            disk=True,
            min_fired=10,
            min_checkpoints=8,
        )
        for incremental, unaligned in ((False, False), (True, True))
    ),
    Case(
        "threads",
        SMALL,
        INSIDE_WORKERS,
        incremental=True,
        disk=True,
        min_fired=5,
        every_restart_restores=True,
    ),
    *(
        Case(
            "threads",
            SMALL,
            INSIDE_WORKERS,
            unaligned,
            incremental,
            min_fired=5,
            every_restart_restores=True,
        )
        for incremental in (False, True)
        for unaligned in (False, True)
    ),
    pytest.param(
        Case("spark", SMALL, ON_SPARK, min_fired=3, every_restart_restores=True),
        marks=pytest.mark.slow,
        id="spark-aligned",
    ),
    pytest.param(
        Case("spark", SMALL, ON_SPARK, incremental=True, min_fired=3, every_restart_restores=True),
        marks=pytest.mark.slow,
        id="spark-aligned-incremental",
    ),
    pytest.param(
        Case(
            "spark",
            SMALL,
            ON_SPARK,
            incremental=True,
            disk=True,
            min_fired=3,
            every_restart_restores=True,
        ),
        marks=pytest.mark.slow,
        id="spark-aligned-incremental-disk",
    ),
]

Outcome = tuple[list[dict[str, Any]], Any]
"""What a host returns: the published output and the ``JobResult``."""
Host = Callable[[Case, pathlib.Path], Outcome]


def run_local(
    case: Case, tmp_path: pathlib.Path, *, mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
) -> Outcome:
    sink = TestingSink()
    result = LocalExecutor(
        running_count_flow(sink, **case.job.flow_kwargs()),
        parallelism=PARALLELISM,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/local"),
        config=case.checkpoints(0.1, mode=mode),
        fault_injector=FaultInjector(list(case.plan)),
        max_restarts=20,
    ).run()
    return sink.output, result


def _spark_spec(case: Case, tmp_path: pathlib.Path, interval: float) -> driver.SparkJobSpec:
    return driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(
            PIPELINE, case.job.pipeline_args(str(tmp_path / "out"))
        ),
        parallelism=PARALLELISM,
        store=config.StoreRef(str(tmp_path / "cp"), f"default/{case.host}"),
        checkpoint=case.checkpoints(interval),
        crashes=case.plan,
        restart=driver.RestartSettings(max_restarts=10, backoff=Backoff(initial=0.01, max=0.05)),
    )


def run_threads(case: Case, tmp_path: pathlib.Path) -> Outcome:
    job = driver.SparkDriver(
        _spark_spec(case, tmp_path, 0.1), launcher=spark_testing.ThreadStageLauncher()
    )
    result = job.run()
    return list(FileSink(str(tmp_path / "out")).read_committed()), result


def run_spark(session: Any, case: Case, tmp_path: pathlib.Path) -> Outcome:
    result = driver.SparkDriver(_spark_spec(case, tmp_path, 0.2), session=session).run()
    return list(FileSink(str(tmp_path / "out")).read_committed()), result


@pytest.fixture(scope="module")
def spark_local_state(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The workers' local state directory (given to Spark's JVM, so to its Python workers)."""
    return tmp_path_factory.mktemp("spark-local-state")


@pytest.fixture(scope="module")
def spark_session(spark_local_state: pathlib.Path) -> Iterator[Any]:
    """One local[3] SparkSession for the module (Spark starts slowly)."""
    from barrier_runtime.spark import session

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(local_copies.ROOT_ENV, str(spark_local_state))
        spark = session.build_session(
            f"local[{PARALLELISM}]", app_name="cjob-crash-matrix", parallelism=PARALLELISM
        )
    yield spark
    spark.stop()


@pytest.fixture
def host(request: pytest.FixtureRequest, case: Case) -> Host:
    if case.host == "spark":
        return functools.partial(run_spark, request.getfixturevalue("spark_session"))
    return {"local": run_local, "threads": run_threads}[case.host]


@pytest.fixture(scope="module")
def failure_free(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Job], list[dict]]:
    """The output of a failure-free in-process run of a job (once per job shape)."""

    @functools.cache
    def run(job: Job) -> list[dict]:
        sink = TestingSink()
        result = LocalExecutor(
            running_count_flow(sink, **job.flow_kwargs(paced=False)),
            parallelism=PARALLELISM,
            store=CheckpointStore(
                open_object_store(str(tmp_path_factory.mktemp("failure-free"))), "default/clean"
            ),
            config=CheckpointConfig(interval=60),  # the final checkpoint publishes it all
        ).run()
        assert result.restarts == 0
        assert check_exactly_once(
            list(expected_output(job.keys, job.events_per_key)), sink.output
        ).exactly_once
        return sink.output

    return run


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_exactly_once_under_crashes(
    case: Case,
    host: Host,
    failure_free: Callable[[Job], list[dict]],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    local = tmp_path / "local"
    if case.host == "spark":  # the workers' environment is the Spark session's
        local = request.getfixturevalue("spark_local_state")
    monkeypatch.setenv(local_copies.ROOT_ENV, str(local))
    # full copies in many small objects (in this process; Spark's workers keep the default)
    monkeypatch.setattr(disk_copies, "PART_BYTES", 1024)
    output, result = host(case, tmp_path)
    report = check_exactly_once(failure_free(case.job), output)
    fired = [f for f in result.failures if "injected crash: " in f]
    print(report.as_dict(), "restarts:", result.restarts, "failures:", result.failures)
    assert len(fired) >= case.min_fired, result.failures
    assert result.restarts == len(fired) == len(result.failures), result.failures
    assert {p for p in FaultPoint if any(f"injected crash: {p.value}" in f for f in fired)} == {
        crash.point for crash in case.plan
    }
    assert len(result.completed_checkpoints) >= case.min_checkpoints
    if case.every_restart_restores:
        assert result.restored_from[1:] and None not in result.restored_from[1:]
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
    job = "default/local" if case.host == "local" else f"default/{case.host}"
    retained = CheckpointStore(open_object_store(str(tmp_path / "cp")), job).list_completed()
    deltas = [h for m in retained for h in m.state_handles if h.delta]
    states = local / job / "state"
    if case.disk:  # the attempts kept their state in RocksDB here, and each removed its own
        assert states.is_dir() and not any(states.iterdir()), list(states.iterdir())
    if case.disk and case.host != "spark":  # a full copy went up in several objects
        whole = collections.Counter(
            (m.checkpoint_id, h.subtask)
            for m in retained
            for h in m.state_handles
            if h.step_id == "count" and not h.delta
        )
        assert max(whole.values()) > 1, whole
    elif case.host != "spark":  # (Spark's cases share a directory)
        assert not states.exists()
    if case.incremental:  # the counts' state came back through bases and deltas in shared/
        assert deltas and all(h.key.startswith("shared/count/") for h in deltas), retained
    else:
        assert not deltas


def test_at_least_once_loses_nothing(tmp_path, failure_free) -> None:
    case = Case("local", LARGE, EVERYWHERE)
    output, result = run_local(case, tmp_path, mode=CheckpointingMode.AT_LEAST_ONCE)
    report = check_exactly_once(failure_free(LARGE), output, identity=("key", "seq"))
    print("at-least-once:", report.as_dict(), "restarts:", result.restarts)
    assert result.restarts >= 10
    assert report.lost == 0


def test_the_checker_catches_a_sink_without_transactions(tmp_path, failure_free) -> None:
    """Guard for the proof itself: a sink that publishes on write duplicates after crashes."""
    from barrier_runtime.api import Sink, SinkWriter

    published: list[dict] = []

    class EagerSink(Sink):
        def writer(self, step_id, subtask, parallelism):
            class W(SinkWriter):
                def write(self, records):
                    published.extend(records)

                def pre_commit(self, checkpoint_id):
                    return None

            return W()

        def commit(self, transaction):
            raise AssertionError("never called")

    store = CheckpointStore(open_object_store(str(tmp_path / "eager")), "default/eager")
    LocalExecutor(
        running_count_flow(EagerSink(), **LARGE.flow_kwargs()),
        parallelism=PARALLELISM,
        store=store,
        config=CheckpointConfig(interval=0.1),
        fault_injector=FaultInjector([Crash(P.PROCESSING, subtask=0, after_records=15_000)]),
    ).run()
    assert check_exactly_once(failure_free(LARGE), published).duplicated > 0
