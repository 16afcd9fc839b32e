"""The example pipelines in ``examples/pipelines`` run and are exactly-once under a crash."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import Crash, FaultInjector, FaultPoint, LocalExecutor

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "pipelines"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wordcount_counts_every_word_once_despite_a_crash(tmp_path) -> None:
    wordcount = _load("wordcount")
    text = ["the quick brown fox", "jumps over the lazy dog", "The end, the END"] * 400
    (tmp_path / "in").mkdir()
    for part in range(3):
        lines = text[part::3]
        (tmp_path / "in" / f"part-{part}.jsonl").write_text(
            "".join(json.dumps({"line": line}) + "\n" for line in lines)
        )
    flow = wordcount.build_flow(str(tmp_path / "in"), str(tmp_path / "out"))
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/wordcount")
    result = LocalExecutor(
        flow,
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.05),
        fault_injector=FaultInjector(
            [Crash(FaultPoint.PROCESSING, task="count", after_records=2000)]
        ),
    ).run()
    assert result.restarts == 1

    output = list(FileSink(str(tmp_path / "out")).read_committed())
    expected = collections.Counter(w for line in text for w in wordcount.WORD.findall(line.lower()))
    final = {}
    seen = collections.defaultdict(list)
    for record in output:
        final[record["word"]] = record["count"]
        seen[record["word"]].append(record["count"])
    assert final == dict(expected)
    assert all(counts == list(range(1, len(counts) + 1)) for counts in seen.values())


def test_clicks_per_minute_counts_every_minute_once_and_keeps_late_clicks_apart(tmp_path) -> None:
    clicks = _load("clicks_per_minute")
    minute = clicks.MINUTE
    (tmp_path / "in").mkdir()
    events = []
    for i in range(3000):  # 3 users, one click every 100 ms for 5 minutes, up to 2 s disorder
        events.append({"user": f"u{i % 3}", "ts": i * 100 - (i * 7919 % 20) * 100})
    late = [{"user": "u1", "ts": 5_001}, {"user": "u2", "ts": 61_001}]  # no other click has them
    events[2500:2500] = late  # minutes 0 and 1 closed long ago (lateness 30 s)
    for part in range(2):
        (tmp_path / "in" / f"part-{part}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in events[part::2])
        )
    flow = clicks.build_flow(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out")])
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/clicks")
    # P = 1: one source subtask reads both files in turn (1,000-record batches), so the
    # two late clicks, in each file's second batch, meet a watermark ~3 minutes on,
    # whatever the threads do; with two source subtasks that would be a race.
    result = LocalExecutor(
        flow,
        parallelism=1,
        store=store,
        config=CheckpointConfig(interval=0.05),
        fault_injector=FaultInjector(
            [Crash(FaultPoint.PROCESSING, task="per-minute", after_records=1000)]
        ),
    ).run()
    assert result.restarts == 1

    counts = list(FileSink(str(tmp_path / "out" / "counts")).read_committed())
    last = {(r["key"], r["window_start"]): r["clicks"] for r in counts}
    on_time = [e for e in events if e not in late]
    expected = collections.Counter((e["user"], e["ts"] // minute * minute) for e in on_time)
    assert last == dict(expected)
    assert sorted(r["ts"] for r in FileSink(str(tmp_path / "out" / "late")).read_committed()) == [
        5_001,
        61_001,
    ]
