"""Without ``--store``, checkpoints go to the user's state directory, not the working one."""

from __future__ import annotations

import pathlib

from barrier_runtime.cli import build_parser, run_cmd


def test_the_default_store_is_the_same_from_any_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    stores = []
    for cwd in (tmp_path / "a", tmp_path / "b"):
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        args = build_parser().parse_args(["run", "p.py"])
        run_cmd.check_args(args)
        stores.append(args.store)
    assert stores == [str(tmp_path / "state" / "cjob" / "checkpoints")] * 2


def test_without_xdg_state_home_it_is_under_home(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run_cmd.default_store() == pathlib.Path(tmp_path, ".local/state/cjob/checkpoints")
