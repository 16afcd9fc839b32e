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
