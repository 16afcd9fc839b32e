"""``cjob run --incremental`` and ``--state-backend`` reach the driver's checkpoint configuration (issue 32)."""

from __future__ import annotations

import pytest

from barrier_runtime.cli import build_parser, run_cmd
from barrier_runtime.cli.preflight import options
from barrier_runtime.core.types import StateBackend, StateBackendKind


def _spec(tmp_path, *flags: str):
    pipeline = tmp_path / "p.py"
    pipeline.write_text("")
    args = build_parser().parse_args(["run", str(pipeline), "--store", str(tmp_path), *flags])
    run_cmd.check_args(args)
    return run_cmd.spec_from_args(args, "flow", token="t")


def test_incremental_is_off_unless_asked_for(tmp_path) -> None:
    assert _spec(tmp_path).checkpoint.incremental is False
    assert _spec(tmp_path, "--incremental").checkpoint.incremental is True
    assert _spec(tmp_path, "--incremental", "--unaligned").checkpoint.unaligned is True


def test_local_recovery_needs_incremental_checkpoints(tmp_path) -> None:
    assert _spec(tmp_path, "--incremental", "--local-recovery").checkpoint.local_recovery
    with pytest.raises(options.PreflightError, match="--local-recovery needs --incremental"):
        _spec(tmp_path, "--local-recovery")


def test_the_state_backend_and_its_memory_reach_the_driver(tmp_path) -> None:
    default = _spec(tmp_path).checkpoint.state_backend
    assert default == StateBackend(StateBackendKind.MEMORY, 256 << 20)
    disk = _spec(tmp_path, "--state-backend", "disk", "--state-memory", "64")
    assert disk.checkpoint.state_backend == StateBackend(StateBackendKind.DISK, 64 << 20)
    with pytest.raises(options.PreflightError, match="--state-memory must be at least 16"):
        _spec(tmp_path, "--state-backend", "disk", "--state-memory", "8")
