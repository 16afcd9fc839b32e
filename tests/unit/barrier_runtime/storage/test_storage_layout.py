"""Checkpoint directory names and what users may type to name a checkpoint."""

from __future__ import annotations

import pytest

from barrier_runtime.core import layout, types

CHK, SP = types.CheckpointKind.CHECKPOINT, types.CheckpointKind.SAVEPOINT


def test_directory_and_metadata_keys() -> None:
    assert layout.CheckpointRef(42, CHK).metadata_key == "checkpoints/chk-0000000042/_metadata"
    assert layout.CheckpointRef(7, SP).directory == "savepoints/sp-0000000007"
    assert layout.CheckpointRef(12345678901, CHK).directory == "checkpoints/chk-12345678901"
    assert str(layout.CheckpointRef(7, SP)) == "savepoint 7"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("checkpoints/chk-0000000042/_metadata", (layout.CheckpointRef(42, CHK), "_metadata")),
        ("savepoints/sp-0000000001/a/b", (layout.CheckpointRef(1, SP), "a/b")),
        ("checkpoints/chk-0000000042", None),
        ("checkpoints/sp-0000000042/x", None),
        ("shared/count/abc", None),
        ("checkpoints/chk-x/_metadata", None),
    ],
)
def test_parse_member(key: str, expected: tuple[layout.CheckpointRef, str] | None) -> None:
    assert layout.parse_member(key) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (42, (42, None, "")),
        ("42", (42, None, "")),
        ("chk-42", (42, CHK, "")),
        ("sp-0000000003", (3, SP, "")),
        ("savepoints/sp-0000000003", (3, SP, "")),
        ("checkpoints/chk-0000000003/_metadata", (3, CHK, "")),
        ("default/job/checkpoints/chk-0000000003/", (3, CHK, "default/job")),
        (
            "s3://b/pre/default/job/savepoints/sp-9?endpoint=http://h:1",
            (9, SP, "s3://b/pre/default/job"),
        ),
        ("file:///data/default/job/checkpoints/chk-5", (5, CHK, "file:///data/default/job")),
    ],
)
def test_parse_reference(
    text: str | int, expected: tuple[int, types.CheckpointKind | None, str]
) -> None:
    assert layout.parse_reference(text) == layout.Reference(*expected)


@pytest.mark.parametrize("text", [0, "0", "-1", "latest", "chk-", "checkpoints/", ""])
def test_parse_reference_refuses_nonsense(text: str | int) -> None:
    assert layout.parse_reference(text) is None


def test_inventory_torn_and_highest() -> None:
    dirs = {
        layout.CheckpointRef(1, CHK): ("checkpoints/chk-0000000001/x",),
        layout.CheckpointRef(5, SP): ("savepoints/sp-0000000005/x",),
    }
    inventory = layout.Inventory(dirs=dirs)
    assert inventory.torn == (layout.CheckpointRef(1, CHK), layout.CheckpointRef(5, SP))
    assert inventory.highest_id == 5
    assert layout.Inventory(dirs={}).highest_id == 0
