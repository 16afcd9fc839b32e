"""``cjob checkpoints delete`` asks before it deletes a savepoint; scripts must say ``--yes``."""

from __future__ import annotations

import io
import sys

import pytest
import stored_checkpoints

from barrier_runtime.core import types
from barrier_runtime.storage import checkpoint_store

JOB = "team/orders"


def _commit(root, cid: int, kind: types.CheckpointKind) -> checkpoint_store.CheckpointStore:
    return stored_checkpoints.commit_checkpoint(root, cid, JOB, kind=kind)


class _Terminal(io.StringIO):
    """stdin as a terminal on which the user types ``answer``."""

    def isatty(self) -> bool:
        return True


class _Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.fixture
def store(tmp_path) -> checkpoint_store.CheckpointStore:
    _commit(tmp_path / "cp", 1, types.CheckpointKind.CHECKPOINT)
    return _commit(tmp_path / "cp", 2, types.CheckpointKind.SAVEPOINT)


def _ids(store: checkpoint_store.CheckpointStore) -> list[int]:
    return [m.checkpoint_id for m in store.list_completed()]


def _delete(cjob, tmp_path, *argv: str):
    return cjob("checkpoints", "delete", "--store", str(tmp_path / "cp"), "--job", JOB, *argv)


def test_a_savepoint_is_not_deleted_from_a_script_without_yes(
    cjob, store, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(sys, "stdin", _Pipe("y\n"))
    sentence = _delete(cjob, tmp_path, "2").assert_mistake()
    assert sentence == (
        f"savepoint 2 in {(tmp_path / 'cp').as_uri()}, job {JOB} is a savepoint (kept for "
        "restores and upgrades; retention never deletes savepoints): pass --yes to delete it, "
        "no terminal here can confirm"
    )
    assert _ids(store) == [1, 2]


def test_yes_deletes_a_savepoint(cjob, store, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Pipe(""))
    result = _delete(cjob, tmp_path, "sp-2", "--yes")
    assert result.code == 0 and result.out.strip() == "deleted checkpoint sp-2"
    assert _ids(store) == [1]


def test_on_a_terminal_y_deletes_the_savepoint(cjob, store, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    result = _delete(cjob, tmp_path, "2")
    assert result.code == 0
    assert f"delete savepoint 2 in {(tmp_path / 'cp').as_uri()}, job {JOB}? [y/N]" in result.err
    assert _ids(store) == [1]


@pytest.mark.parametrize("answer", ["\n", "n\n", "nope\n", ""])
def test_on_a_terminal_anything_else_keeps_it(cjob, store, tmp_path, monkeypatch, answer) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    result = _delete(cjob, tmp_path, "2")
    assert result.code == 1
    assert result.err.strip().endswith("kept savepoint 2: nothing deleted")
    assert _ids(store) == [1, 2]


def test_a_checkpoint_is_deleted_without_asking(cjob, store, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Pipe(""))
    result = _delete(cjob, tmp_path, "1")
    assert result.code == 0 and result.err == ""
    assert _ids(store) == [2]
