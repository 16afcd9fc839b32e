"""Staged parts of broker sinks: Arrow columns for string entries, JSON lines otherwise,
and parts an earlier version staged as JSON lines still commit and are cleaned up."""

from __future__ import annotations

import json

from barrier_runtime.connectors import _staging


def staging(tmp_path) -> _staging.Staging:
    return _staging.Staging(str(tmp_path / "staging"))


def test_string_entries_are_staged_as_arrow_and_read_back_exactly(tmp_path) -> None:
    area = staging(tmp_path)
    entries = [["k1", '{"n":1,"s":"a\\nb"}'], [None, '{"n":2}'], ["ключ\n", ""]]
    key = area.stage("out", 3, entries)
    assert key.startswith("_staging/out/0003-") and key.endswith(".arrow")
    txn = _staging.SinkTxn(step="out", subtask=3, checkpoint=1, nonce="x", parts=[key])
    assert list(area.entries(txn) or []) == entries


def test_other_entries_stay_json_lines(tmp_path) -> None:
    area = staging(tmp_path)
    entries = [["subject", {"n": 1}], ["subject", 2]]
    key = area.stage("out", 0, entries)
    assert key.endswith(".jsonl")
    txn = _staging.SinkTxn(step="out", subtask=0, checkpoint=1, nonce="x", parts=[key])
    assert list(area.entries(txn) or []) == entries


def test_parts_staged_as_json_lines_by_an_earlier_version_commit_and_are_recovered(
    tmp_path,
) -> None:
    area = staging(tmp_path)
    legacy = "_staging/out/0000-legacy.jsonl"
    area.store.put(legacy, b'["k","{\\"n\\":1}"]\n[null,"{\\"n\\":2}"]\n')
    fresh = area.stage("out", 0, [["k", json.dumps({"n": 3})]])
    txn = _staging.SinkTxn(step="out", subtask=0, checkpoint=1, nonce="x", parts=[legacy, fresh])
    assert list(area.entries(txn) or []) == [["k", '{"n":1}'], [None, '{"n":2}'], ["k", '{"n": 3}']]
    area.recover("out")
    assert list(area.store.list("_staging/out/")) == []
