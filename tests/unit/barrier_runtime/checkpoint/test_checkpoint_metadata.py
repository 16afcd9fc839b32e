"""The ``_metadata`` document: a lossless round trip, and older formats refused by name."""

from __future__ import annotations

import json

import pytest

from barrier_runtime.core import metadata, types


def _doc() -> metadata.CheckpointMetadata:
    return metadata.CheckpointMetadata(
        checkpoint_id=types.CheckpointId(7),
        kind=types.CheckpointKind.CHECKPOINT,
        trigger_time=10.0,
        completion_time=10.5,
        fingerprint=metadata.JobFingerprint(
            step_ids=(types.StepId("src"), types.StepId("sum")), max_parallelism=128, parallelism=2
        ),
        source_positions={types.StepId("src"): {"p-0": 100}},
        sink_transactions={types.StepId("out"): ({"parts": []},)},
    )


def test_round_trip() -> None:
    doc = _doc()
    assert metadata.CheckpointMetadata.from_json(doc.to_json()) == doc


def test_a_checkpoint_of_an_older_format_is_refused_not_misread() -> None:
    """Version 1 placed integer keys in other key groups: reading it would misplace state."""
    raw = json.loads(_doc().to_json())
    raw["format_version"] = 1
    with pytest.raises(
        metadata.CorruptMetadataError, match="unsupported metadata format version 1"
    ):
        metadata.CheckpointMetadata.from_json(json.dumps(raw).encode())
