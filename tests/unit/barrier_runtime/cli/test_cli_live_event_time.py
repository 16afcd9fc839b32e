"""The live view's event-time part: the job's lowest watermark, how fast it advances, its lag
behind the wall clock while the source is live, late records dropped."""

from __future__ import annotations

import io
import json
import pathlib
import time

import pyarrow as pa

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import MAX_WATERMARK, MIN_WATERMARK, BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling
from barrier_runtime.cli import progress, status_figures
from barrier_runtime.control.job import RuntimeMetrics
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource


def test_the_lowest_known_watermark_its_rate_and_its_lag_are_shown() -> None:
    metrics = RuntimeMetrics(
        watermarks={"src": 1_700_000_060_000, "w": 1_700_000_000_000, "idle": MIN_WATERMARK},
        late_dropped={"w": 3},
    )
    before = status_figures.EventTimeSample(at=1_700_000_085.0, watermark_ms=1_699_999_995_000)
    text, fields = status_figures.event_time(metrics, now=1_700_000_090.0, previous=before)
    assert fields == {
        "watermark": "2023-11-14T22:13:20.000Z",
        "watermark_ms": 1_700_000_000_000,
        "watermark_lag_s": 90.0,
        "event_time_rate": 1.0,
        "late_dropped": 3,
    }
    assert text == " | watermark 2023-11-14 22:13:20Z (lag 90.0s, +1.0s/s), late dropped 3"


def test_a_replay_of_last_years_events_shows_its_progress_not_a_wall_clock_lag() -> None:
    """Replaying old events, the lag behind the wall clock (here 31.8 million seconds) says
    nothing; how fast event time advances does (an hour of events per second)."""
    year_ago_ms = 1_700_000_000_000 - 368 * 86_400_000
    metrics = RuntimeMetrics(watermarks={"w": year_ago_ms})
    before = status_figures.EventTimeSample(
        at=1_700_000_085.0, watermark_ms=year_ago_ms - 18_000_000
    )
    text, fields = status_figures.event_time(metrics, now=1_700_000_090.0, previous=before)
    assert "watermark_lag_s" not in fields and "lag" not in text
    assert fields["event_time_rate"] == 3600.0
    assert fields["watermark"] == "2022-11-11T22:13:20.000Z"
    assert text == " | watermark 2022-11-11 22:13:20Z (+60m/s)"


def test_without_event_time_or_once_finished_nothing_is_shown() -> None:
    assert status_figures.event_time(RuntimeMetrics(), now=0.0) == ("", {})
    done = RuntimeMetrics(watermarks={"w": MAX_WATERMARK})
    assert status_figures.event_time(done, now=0.0) == ("", {})


def test_a_running_windowed_job_reports_its_watermark_lag(tmp_path: pathlib.Path) -> None:
    now_ms = int(time.time() * 1000)
    clicks = [{"user": i % 3, "ts": now_ms - 60_000 + i * 20} for i in range(3_000)]
    flow = Dataflow("live-time")
    events = flow.source(
        "clicks",
        TestingSource(clicks, batch_size=50),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(1_000),
    )
    slowed = events.map_batches("slow", _slowly)
    slowed.key_by("by-user", "user").window_agg(
        "per-second", Tumbling(1_000), timestamps="ts", how="count"
    ).sink("out", TestingSink())
    store = CheckpointStore(open_object_store(str(tmp_path)), "t/live-time")
    executor = LocalExecutor(
        flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)
    )
    stream = io.StringIO()
    with progress.ProgressView(
        executor, progress.Output(json_lines=True, stream=stream), status_every=0.1
    ):
        executor.run()
    statuses = [json.loads(line) for line in stream.getvalue().splitlines()]
    timed = [s for s in statuses if s["event"] == "status" and "watermark_ms" in s]
    assert timed, statuses
    assert all(0 < s["watermark_lag_s"] < 600 for s in timed)


def _slowly(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.01)  # a job that runs long enough for several status lines
    return batch
