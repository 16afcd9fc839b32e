"""Every event ``cjob run --json`` emits, and every field of it, is in docs/json-events.md.

The job runs in-process (the same restart loop, live view and summary as on Spark)
with event time, a crash and a restart, so that the status lines carry their
optional parts; the control API's announcement is made as ``cjob run`` makes it.
(``tests/e2e/barrier_runtime/test_chaos_run_reports.py`` checks a real ``cjob run``'s
events the same way.)
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import threading
import time
import types as pytypes

import cli_contract
import pyarrow as pa

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling
from barrier_runtime.cli import progress, run_cmd, run_summary
from barrier_runtime.core import faults
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource


def test_every_emitted_field_is_documented(tmp_path: pathlib.Path, jobs_dir: pathlib.Path) -> None:
    now_ms = int(time.time() * 1000)
    clicks = [{"user": i % 3, "ts": now_ms - 60_000 + i * 20} for i in range(2_000)]
    flow = Dataflow("documented")
    events = flow.source(
        "clicks",
        TestingSource(clicks, batch_size=50),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(1_000),
    )
    stream = _StatusStream()
    events.map_batches("slow", stream.hold_until_a_status_shows_the_watermark).key_by(
        "by-user", "user"
    ).window_agg("per-second", Tumbling(1_000), timestamps="ts", how="count").sink(
        "out", TestingSink()
    )
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "t/documented")
    crash = faults.Crash(faults.FaultPoint.PROCESSING, task="clicks", after_records=600)
    executor = LocalExecutor(
        flow,
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.05),
        fault_injector=faults.FaultInjector([crash]),
        restart_backoff=0.3,
    )
    out = progress.Output(json_lines=True, stream=stream)
    spec = pytypes.SimpleNamespace(store=pytypes.SimpleNamespace(job_path="t/documented"))
    publisher = run_cmd._ControlPublisher(out)
    publisher.announce_for(spec, store.describe())("http://127.0.0.1:1")  # type: ignore[arg-type]
    progress.announce_checkpoint_ids(out, executor.checkpoint_ids)
    with progress.ProgressView(executor, out, status_every=0.05):
        result = executor.run()
    with contextlib.redirect_stdout(stream):
        run_summary.summary(out, pytypes.SimpleNamespace(job=executor), result)  # type: ignore[arg-type]
    publisher.withdraw()

    emitted = [json.loads(line) for line in stream.getvalue().splitlines()]
    kinds = {e["event"] for e in emitted}
    assert {"control", "checkpoint_ids", "checkpoint", "failure", "restart", "status"} <= kinds
    assert any("watermark" in e for e in emitted if e["event"] == "status")
    cli_contract.assert_events_documented(emitted)


class _StatusStream(io.StringIO):
    """The events' stream; it knows when a status line carried the watermark, and the job
    waits for that halfway through its input (a loaded machine once finished the job
    before the live view printed one)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen = threading.Event()
        self._batches = 0

    def write(self, text: str) -> int:
        if '"event": "status"' in text and '"watermark"' in text:
            self._seen.set()
        return super().write(text)

    def hold_until_a_status_shows_the_watermark(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self._batches += 1
        if self._batches >= 20:  # past 1,000 clicks: watermarks have moved
            self._seen.wait(timeout=60)
        time.sleep(0.005)  # long enough for status lines and checkpoints
        return batch
