"""Fixtures: the real operator (subprocess) against a real kube-apiserver and a fake driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cjob_operator_testing.harness import OperatorHarness


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorHarness]:
    workdir = tmp_path_factory.mktemp("operator")
    with OperatorHarness(workdir) as h:
        yield h


@pytest.fixture(autouse=True)
def delete_jobs_afterwards(harness: OperatorHarness) -> Iterator[None]:
    """Keep the shared operator's load flat: each test's jobs are deleted after it."""
    before = {j["metadata"]["name"] for j in harness.all("checkpointedjobs")}
    yield
    for job in harness.all("checkpointedjobs"):
        name = job["metadata"]["name"]
        if name not in before and not job["metadata"].get("deletionTimestamp"):
            harness.http("DELETE", harness.jobs_path(name))


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


ManifestFactory = Callable[..., dict[str, Any]]


@pytest.fixture(scope="module")
def manifest(store_dir: Path) -> ManifestFactory:
    """``manifest(name, **spec_overrides)``: a CheckpointedJob using the local store."""

    def make(name: str, **spec: Any) -> dict[str, Any]:
        return job_manifest(name, store_dir, **spec)

    return make


def job_manifest(name: str, store: Path, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "image": "registry.local/cjob-runtime:1",
        "pipeline": {"module": "examples.wordcount", "args": ["--rate", "100"]},
        "parallelism": 2,
        "maxParallelism": 64,
        "executor": {"instances": 2, "cores": 1, "memory": "1Gi"},
        "driver": {"cores": 1, "memory": "1Gi", "serviceAccount": "cjob-driver"},
        "sparkConf": {"spark.sql.shuffle.partitions": "4"},
        "checkpointing": {"interval": "1s", "timeout": "30s"},
        "storage": {
            "endpoint": f"file://{store}",
            "bucket": "ckpt",
            "prefix": "cjob",
            "credentialsSecret": {"name": "s3-creds"},
        },
        "restartPolicy": {
            "type": "Always",
            "maxRestarts": 5,
            "window": "10m",
            "backoff": {"initial": "1s", "max": "4s", "multiplier": 2, "jitter": 0.0},
        },
    }
    base.update(spec)
    return {
        "apiVersion": "checkpointed.dev/v1alpha1",
        "kind": "CheckpointedJob",
        "metadata": {"name": name},
        "spec": base,
    }
