"""Task-local recovery's copies (issue 32): verified before use, pruned per subtask by age."""

from __future__ import annotations

import pathlib

import pytest

from barrier_runtime.core import metadata as md
from barrier_runtime.storage import integrity, local_copies


def _handle(key: str, data: bytes) -> md.StateHandle:
    return integrity.make_handle(key, data, "count", 0, md.HandleKind.KEYED)


def test_a_copy_that_does_not_match_its_handle_is_never_used_and_goes(tmp_path) -> None:
    copies = local_copies.LocalCopies(tmp_path)
    handle = _handle("shared/count/0000000004-0-abc", b"the state")
    copies.keep(handle.key, b"the state")
    (tmp_path / handle.key).write_bytes(b"the stale")  # same size, other bytes
    assert copies.read(handle) is None
    assert not (tmp_path / handle.key).exists()
    assert copies.read(handle) is None  # nothing there now


def test_only_shared_objects_have_copies(tmp_path) -> None:
    copies = local_copies.LocalCopies(tmp_path)
    with pytest.raises(ValueError, match="only shared objects"):
        copies.keep("checkpoints/chk-0000000001/count/0.arrow", b"x")
    assert copies.read(_handle("checkpoints/chk-0000000001/count/0.arrow", b"x")) is None
    with pytest.raises(ValueError):
        copies.keep("shared/../../etc/passwd", b"x")


def test_prune_takes_only_older_copies_of_its_own_subtask(tmp_path) -> None:
    copies = local_copies.LocalCopies(tmp_path)
    names = ["0000000003-0-a", "0000000005-0-b", "0000000003-1-c", "0000000004-0-d"]
    for name in names:
        copies.keep(f"shared/count/{name}", b"x")
    copies.keep("shared/other/0000000001-0-e", b"x")
    assert copies.prune(step_id="count", subtask=0, before=5) == 2
    left = sorted(p.name for p in (tmp_path / "shared").rglob("*") if p.is_file())
    assert left == ["0000000001-0-e", "0000000003-1-c", "0000000005-0-b"]
    assert copies.prune(step_id="missing", subtask=0, before=9) == 0


def test_the_default_root_is_per_job_and_follows_the_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(local_copies.ROOT_ENV, str(tmp_path))
    assert local_copies.default_root("ns/job") == pathlib.Path(tmp_path, "ns/job")
