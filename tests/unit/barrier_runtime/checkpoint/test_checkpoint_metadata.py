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


def test_records_published_add_up_the_acknowledged_sink_records_to_the_restored_count() -> None:
    """What a checkpoint publishes is counted at commit: the restored checkpoint's count plus
    every subtask's records written since, as its acknowledgement reports them."""
    acks = [
        metadata.TaskAcknowledgement(
            types.CheckpointId(9),
            metadata.TaskKey(types.TaskId("out"), subtask),
            sink_records={types.StepId("out"): n},
        )
        for subtask, n in ((0, 40), (1, 2))
    ]
    doc = metadata.CheckpointMetadata.from_acknowledgements(
        types.CheckpointId(9),
        types.CheckpointKind.CHECKPOINT,
        1.0,
        2.0,
        _doc().fingerprint,
        acks,
        published_before={types.StepId("out"): 100},
    )
    assert doc.records_published == {"out": 142}
    assert metadata.CheckpointMetadata.from_json(doc.to_json()).records_published == {"out": 142}


def test_a_document_written_before_records_were_counted_reads_as_none_published() -> None:
    raw = json.loads(_doc().to_json())
    del raw["records_published"]
    assert metadata.CheckpointMetadata.from_json(json.dumps(raw).encode()).records_published == {}
