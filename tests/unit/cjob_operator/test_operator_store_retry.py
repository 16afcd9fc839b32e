"""A checkpoint store that cannot be read is tried again with backoff, not on every tick."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cjob_operator import manifests, observe
from cjob_operator.act import perform
from cjob_operator.model import observation, spec

SPEC = spec.JobSpec.from_storage({"storage": {"endpoint": "http://minio:9000", "bucket": "ckpt"}})
BASE = {"namespace": "ns", "name": "j", "uid": "u"}


class RecordingStore:
    """Stands in for ``perform.open_store``: records each read, fails while told to."""

    def __init__(self) -> None:
        self.reads: list[float] = []
        self.failing = True
        self.now = 0.0

    async def open_store(self, tools: Any, obs: Any) -> RecordingStore:
        self.reads.append(self.now)
        if self.failing:
            raise ConnectionError("cannot reach S3 at http://minio:9000")
        return self

    async def view(self) -> observation.StoreView:
        return observation.StoreView.empty()


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> RecordingStore:
    recording = RecordingStore()
    monkeypatch.setattr(perform, "open_store", recording.open_store)
    return recording


def _reads_over(store: RecordingStore, tools: perform.Tools, seconds: int) -> list[float]:
    for tick in range(seconds + 1):  # a reconcile every second, each wanting a fresh read
        store.now = float(tick)
        asyncio.run(observe._store(tools, BASE, SPEC, True, store.now))
    return store.reads


def test_failed_reads_back_off_exponentially_up_to_a_minute(store: RecordingStore) -> None:
    tools = perform.Tools(None, perform.JobMemory(), manifests.JobRef("ns", "j", "u"))  # type: ignore[arg-type]

    reads = _reads_over(store, tools, 200)

    assert reads[:7] == [0.0, 2.0, 6.0, 14.0, 30.0, 62.0, 122.0]  # 2, 4, 8, 16, 32, 60 s
    assert tools.memory.store_view is not None and not tools.memory.store_view.readable
    assert "cannot reach S3 at http://minio:9000" in (tools.memory.store_view.error or "")


def test_a_read_that_succeeds_ends_the_backoff(store: RecordingStore) -> None:
    tools = perform.Tools(None, perform.JobMemory(), manifests.JobRef("ns", "j", "u"))  # type: ignore[arg-type]
    _reads_over(store, tools, 6)  # reads at 0, 2, 6: the next would be at 14
    store.failing = False

    store.now = 14.0
    view = asyncio.run(observe._store(tools, BASE, SPEC, True, store.now))
    store.now = 15.0
    asyncio.run(observe._store(tools, BASE, SPEC, True, store.now))

    assert view is not None and view.readable
    assert store.reads == [0.0, 2.0, 6.0, 14.0, 15.0]  # fresh reads on every tick again
