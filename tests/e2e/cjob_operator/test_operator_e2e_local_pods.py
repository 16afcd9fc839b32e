"""Operator → pod process → control API → store → crash → restart, all on one machine.

The kubelet harness runs every driver pod's command as a local process: here the
stand-in for ``cjob driver`` (the Spark driver is built in another issue; swap the
``command_map`` to run the real one). Each process is crashed with SIGKILL twice and
the operator must restart it from the newest completed checkpoint each time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cjob_operator_testing.harness import OperatorHarness


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorHarness]:
    with OperatorHarness(tmp_path_factory.mktemp("e2e"), local_pods=True) as h:
        yield h


def manifest(name: str, store: Path) -> dict[str, Any]:
    return {
        "apiVersion": "checkpointed.dev/v1alpha1",
        "kind": "CheckpointedJob",
        "metadata": {"name": name},
        "spec": {
            "image": "local",
            "pipeline": {"module": "examples.counts"},
            "parallelism": 2,
            "checkpointing": {"interval": "500ms", "timeout": "10s"},
            "storage": {
                "endpoint": f"file://{store}",
                "bucket": "ckpt",
                "credentialsSecret": {"name": "s3-creds"},  # the CRD requires one
            },
            "restartPolicy": {
                "type": "Always",
                "maxRestarts": 5,
                "window": "10m",
                "backoff": {"initial": "500ms", "max": "2s", "jitter": 0.0},
            },
        },
    }


def starts(root: Path) -> list[dict[str, Any]]:
    path = root / "_starts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def committed(root: Path) -> list[int]:
    folder = root / "checkpoints"
    return (
        sorted(
            int(p.name.split("-")[1]) for p in folder.glob("chk-*") if (p / "_metadata").exists()
        )
        if folder.exists()
        else []
    )


def test_crashed_driver_processes_restart_from_the_newest_checkpoint(
    harness: OperatorHarness, tmp_path: Path
) -> None:
    h = harness
    root = tmp_path / "ckpt" / "cjob" / h.namespace / "pi"
    h.create_job(manifest("pi", tmp_path))
    h.wait_for(lambda: h.job_status("pi").get("phase") == "Running", "Running", timeout=30)
    assert starts(root)[0]["restore_from"] is None  # nothing to restore on first start

    assert h.kubelet is not None
    for crash in (1, 2):
        h.wait_for(
            lambda n=crash: len(committed(root)) >= 2 * n, f"checkpoints before crash {crash}"
        )
        newest = max(committed(root))
        h.on_loop(h.kubelet.kill, h.namespace, "pi-driver")
        h.wait_for(lambda n=crash: len(starts(root)) == n + 1, f"restart {crash}", timeout=30)
        assert starts(root)[-1]["restore_from"] == str(newest)
        assert h.job_status("pi")["restarts"]["count"] == crash
        h.wait_for(lambda: h.job_status("pi").get("phase") == "Running", "Running again")

    # Suspend: the process takes a final savepoint and exits 0; resume restores from it.
    h.patch_spec("pi", {"state": "suspended"})
    h.wait_for(lambda: h.job_status("pi").get("phase") == "Suspended", "Suspended", timeout=30)
    savepoint = h.job_status("pi")["checkpoints"]["lastSavepoint"]["path"]
    h.patch_spec("pi", {"state": "running"})
    h.wait_for(lambda: len(starts(root)) == 4, "resumed", timeout=30)
    assert starts(root)[-1]["restore_from"] == savepoint

    h.delete_job("pi")
    h.wait_for(lambda: h.job("pi") is None and not h.kubelet.pods, "deleted, processes gone")
