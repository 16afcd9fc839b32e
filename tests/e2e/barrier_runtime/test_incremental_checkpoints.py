"""Incremental checkpoints in process (issue 32): retention, and a corrupt shared object.

After many checkpoints the store holds exactly what the retained checkpoints and
a savepoint reference; a damaged delta makes the checkpoints that reference it unusable, and the
restore falls back to an older one.

The running count (P = 2) checkpoints every 50 ms with ``retained = 3``: its chains take
new bases in the background again and again, so older bases and deltas must go once no
retained checkpoint references them, and deltas of checkpoints that never completed once
the job has ended.
"""

from __future__ import annotations

import pathlib
import threading

import pytest
import waiting

from barrier_runtime.core import layout, types
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import expected_output, running_count_flow
from barrier_runtime.storage import id_mark
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    JobFailedError,
    LocalExecutor,
    TestingSink,
    check_exactly_once,
)

JOB = "default/retention"
SHAPE = {"keys": 300, "events_per_key": 300, "partitions": 4, "batch_size": 100}


def _run(tmp_path: pathlib.Path, crashes: list[Crash]) -> tuple[CheckpointStore, TestingSink, int]:
    """The job, with a savepoint taken once 20 checkpoints have completed."""
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), JOB)
    executor = LocalExecutor(
        running_count_flow(sink, rate_per_partition=2_000, **SHAPE),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.05, retained=3, incremental=True),
        fault_injector=FaultInjector(crashes),
        max_restarts=5,
    )

    def savepoint() -> None:
        waiting.wait_until(
            lambda: executor.checkpoint_stats().counts.completed >= 20, 60, "20 checkpoints"
        )
        executor.trigger_checkpoint(types.CheckpointKind.SAVEPOINT)

    side = threading.Thread(target=savepoint, daemon=True)
    side.start()
    result = executor.run()
    side.join(5)
    return store, sink, len(result.completed_checkpoints)


def _stored(tmp_path: pathlib.Path) -> set[str]:
    root = tmp_path / "cp" / JOB
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_the_store_holds_exactly_what_retained_checkpoints_and_savepoints_reference(
    tmp_path,
) -> None:
    store, sink, completed = _run(tmp_path, [Crash(FaultPoint.PROCESSING, after_records=30_000)])
    assert completed >= 50, completed
    expected = list(expected_output(SHAPE["keys"], SHAPE["events_per_key"]))
    report = check_exactly_once(expected, sink.output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
    kept = store.list_completed()
    savepoints = [m for m in kept if m.kind is types.CheckpointKind.SAVEPOINT]
    retained = [m for m in kept if m.kind is types.CheckpointKind.CHECKPOINT]
    assert len(savepoints) == 1 and len(retained) == 3, kept
    (sp,) = savepoints
    assert sp.state_handles and not any(h.key.startswith("shared/") for h in sp.state_handles)
    handles = [h for m in retained for h in m.state_handles]
    assert any(h.delta for h in handles), "the checkpoints are incremental"
    assert any(
        h.as_of is not None and h.as_of < m.checkpoint_id and not h.delta
        for m in retained
        for h in m.state_handles
    ), "a base outlives the checkpoint that wrote it"
    # the savepoint is self-contained: its objects live under its own directory
    referenced = {h.key for h in handles} | {h.key for h in sp.state_handles}
    commits = {layout.CheckpointRef.of(m).metadata_key for m in kept}
    assert _stored(tmp_path) - {id_mark.NAME} == referenced | commits


def test_a_corrupt_delta_makes_its_checkpoints_unusable_and_the_restore_falls_back(
    tmp_path,
) -> None:
    """The newest checkpoint's own delta is damaged after the job died: the restore skips
    the checkpoint that references it and resumes from the one before. Nothing is lost;
    what the skipped checkpoint had published comes again, once (a fallback past a
    published checkpoint cannot take back what readers saw), and nothing else does."""
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), JOB)

    def executor(**kwargs) -> LocalExecutor:
        return LocalExecutor(
            running_count_flow(sink, rate_per_partition=2_000, **SHAPE),
            parallelism=2,
            store=store,
            config=CheckpointConfig(interval=0.05, retained=5, incremental=True),
            **kwargs,
        )

    dying = executor(
        fault_injector=FaultInjector([Crash(FaultPoint.SNAPSHOT, checkpoint_id=12)]),
        max_restarts=0,
    )
    with pytest.raises(JobFailedError):
        dying.run()
    newest = store.select_restore_point()
    assert newest is not None and newest.checkpoint_id == 11
    (delta,) = [h for h in newest.state_handles if h.delta and h.as_of == 11 and h.subtask == 0]
    damaged = tmp_path / "cp" / JOB / delta.key
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"!")
    fallback = store.load(10)  # read now: retention deletes it as the job goes on
    result = executor().run()
    assert result.restored_from[0] == 10  # the newest checkpoint not referencing it
    skipped = newest.records_published["out"] - fallback.records_published["out"]
    assert skipped > 0
    expected = list(expected_output(SHAPE["keys"], SHAPE["events_per_key"]))
    report = check_exactly_once(expected, sink.output)
    # A record of the skipped checkpoint comes once more (as far as its sinks had committed
    # it before the job stopped) and repeats its key's sequence number (out of order too);
    # nothing else is duplicated, nothing is lost.
    assert report.lost == 0 and report.duplicated == report.out_of_order <= skipped, report


class _CountingStore:
    """An object store that counts the reads of each ``shared/`` object."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.reads: dict[str, int] = {}

    def get(self, key: str) -> bytes:
        if "/shared/" in key:
            self.reads[key] = self.reads.get(key, 0) + 1
        return self._inner.get(key)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def test_local_recovery_reads_the_workers_own_copies_on_restore(tmp_path, monkeypatch) -> None:
    """With local recovery the restored attempt reads its chains from local copies: the
    store serves each object once (the driver's verification before the restore), not twice;
    and what is left locally is what the newest checkpoints need."""
    monkeypatch.setenv("CJOB_LOCAL_STATE_DIR", str(tmp_path / "local"))
    counting = _CountingStore(open_object_store(str(tmp_path / "cp")))
    store = CheckpointStore(counting, JOB)  # type: ignore[arg-type]
    sink = TestingSink()
    crash = Crash(FaultPoint.PROCESSING, after_records=30_000)
    result = LocalExecutor(
        running_count_flow(sink, rate_per_partition=2_000, **SHAPE),
        parallelism=2,
        store=store,
        config=CheckpointConfig(
            interval=0.05, retained=10_000, incremental=True, local_recovery=True
        ),
        fault_injector=FaultInjector([crash]),
        max_restarts=2,
    ).run()
    assert result.restarts == 1 and result.restored_from[1] is not None
    expected = list(expected_output(SHAPE["keys"], SHAPE["events_per_key"]))
    report = check_exactly_once(expected, sink.output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
    restored = store.find(result.restored_from[1])  # find: load would read again
    chain = [f"{JOB}/{h.key}" for h in restored.state_handles if h.as_of is not None]
    assert chain and all(counting.reads.get(key) == 1 for key in chain), counting.reads
    local = tmp_path / "local" / JOB
    kept = {str(p.relative_to(local)) for p in local.rglob("*") if p.is_file()}
    final = store.find(result.final_checkpoint)
    needed = {h.key for h in final.state_handles if h.as_of is not None}
    assert needed <= kept
    # the first attempt's chains went once the restarted attempt's bases had completed
    restored_at = result.restored_from[1]
    assert all(int(pathlib.Path(k).name.split("-")[0]) > restored_at for k in kept), kept
