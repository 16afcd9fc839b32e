"""One log file per invocation: where it goes, what it is called, how many are kept."""

from __future__ import annotations

import logging
import os
import re
import tempfile

import pytest

from barrier_runtime.cli import logfile


@pytest.fixture
def no_log_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logfile.LOG_DIR_ENV, raising=False)


def test_cjob_log_dir_wins(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(logfile.LOG_DIR_ENV, str(tmp_path / "mine"))
    assert logfile.writable_directory() == tmp_path / "mine"


def test_xdg_state_home_is_next(tmp_path, monkeypatch, no_log_dir_env) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert logfile.writable_directory() == tmp_path / "state" / "cjob" / "logs"


def test_home_state_without_xdg(tmp_path, monkeypatch, no_log_dir_env) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert logfile.writable_directory() == tmp_path / ".local" / "state" / "cjob" / "logs"


def test_the_temp_dir_when_the_state_dir_cannot_be_created(
    tmp_path, monkeypatch, no_log_dir_env
) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "file"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert logfile.writable_directory() == tmp_path / "tmp" / f"cjob-logs-{os.getuid()}"


def test_the_name_has_command_timestamp_and_pid(tmp_path) -> None:
    log = logfile.InvocationLog("checkpoints-list", directory=tmp_path)
    path = log.ensure()
    assert path is not None and path.parent == tmp_path
    assert re.fullmatch(rf"cjob-checkpoints-list-\d{{8}}-\d{{6}}-{os.getpid()}\.log", path.name)
    log.close()


def test_only_the_newest_logs_are_kept(tmp_path) -> None:
    for i in range(logfile.KEEP + 5):
        old = tmp_path / f"cjob-run-old-{i}.log"
        old.write_text("x")
        os.utime(old, (1000 + i, 1000 + i))
    (tmp_path / "unrelated.txt").write_text("kept")
    log = logfile.InvocationLog("run", directory=tmp_path)
    current = log.ensure()
    log.close()
    kept = sorted(p.name for p in tmp_path.glob("cjob-*.log"))
    assert len(kept) == logfile.KEEP and current is not None and current.name in kept
    assert "cjob-run-old-24.log" in kept and "cjob-run-old-5.log" not in kept
    assert (tmp_path / "unrelated.txt").exists()


def test_attach_records_debug_and_close_restores_the_root_logger(tmp_path) -> None:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    log = logfile.InvocationLog("run", directory=tmp_path)
    path = log.attach()
    logging.getLogger("barrier_runtime.test").debug("a debug line")
    logging.getLogger("urllib3.connectionpool").debug("a request line")
    log.close()
    assert root.level == level and root.handlers == handlers
    assert path is not None
    text = path.read_text()
    assert "a debug line" in text and "a request line" not in text


def test_record_writes_the_chained_traceback(tmp_path) -> None:
    log = logfile.InvocationLog("checkpoints-show", directory=tmp_path)
    assert log.path is None
    try:
        try:
            raise OSError("the cause")
        except OSError as cause:
            raise ValueError("the effect") from cause
    except ValueError as exc:
        path = log.record(exc, "cjob: error: the effect")
    log.close()
    assert path is not None and path == log.path
    text = path.read_text()
    assert "cjob: error: the effect" in text and "OSError: the cause" in text
    assert "direct cause" in text and "ValueError: the effect" in text


def test_no_writable_directory_means_no_file(monkeypatch) -> None:
    monkeypatch.setattr(logfile, "writable_directory", lambda: None)
    log = logfile.InvocationLog("run")
    assert log.attach() is None and log.record(ValueError("x"), "x") is None
    log.close()


def test_an_unwritable_cjob_log_dir_falls_back(tmp_path, monkeypatch) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv(logfile.LOG_DIR_ENV, str(tmp_path / "file" / "logs"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert logfile.writable_directory() == tmp_path / "state" / "cjob" / "logs"
