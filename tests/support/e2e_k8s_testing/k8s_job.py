"""The scenario's job: its settings, its CheckpointedJob manifest, and a recorder of what the
cluster did while it ran (executor pods, driver pods, completed checkpoints)."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from barrier_runtime import demo, testing
from barrier_runtime.connectors import files
from e2e_k8s_testing.cluster import Cluster, Obj

ROLE = "checkpointed.dev/role"
JOB_LABEL = "checkpointed.dev/job"
SPARK_ROLE = "spark-role"
"""The label Spark's Kubernetes backend puts on the executor pods it creates."""


@dataclasses.dataclass(frozen=True)
class Settings:
    namespace: str = "streaming"
    operator_namespace: str = "cjob-system"
    release: str = "cjob"
    job: str = "counts"
    runtime_image: str = "cjob-runtime:dev"
    operator_image: str = "cjob-operator:dev"
    image_pull_policy: str = "Never"
    """``Never`` for images loaded into the node; ``IfNotPresent`` for pulled ones."""
    chart: str = "charts/checkpointed-operator"
    storage_endpoint: str = "http://minio.minio.svc:9000"
    bucket: str = "e2e"
    credentials_secret: str = "minio-credentials"
    parallelism: int = 3
    keys: int = 300
    events_per_key: int = 300
    rate: float = 500.0
    executor_kills: int = 2
    driver_kills: int = 1
    step_timeout: float = 180.0

    @property
    def output_url(self) -> str:
        return f"s3://{self.bucket}/{self.job}-out?endpoint={self.storage_endpoint}"


def job_manifest(s: Settings) -> Obj:
    return {
        "apiVersion": "checkpointed.dev/v1alpha1",
        "kind": "CheckpointedJob",
        "metadata": {"name": s.job, "namespace": s.namespace},
        "spec": {
            "image": s.runtime_image,
            "imagePullPolicy": s.image_pull_policy,
            "pipeline": {
                "module": "barrier_runtime.demo",
                "args": [
                    "--out",
                    s.output_url,
                    "--keys",
                    str(s.keys),
                    "--events-per-key",
                    str(s.events_per_key),
                    "--rate",
                    str(s.rate),
                ],
            },
            "parallelism": s.parallelism,
            "driver": {"cores": 1, "memory": "512Mi", "terminationGracePeriodSeconds": 30},
            "executor": {"cores": 1, "memory": "512Mi", "instances": s.parallelism},
            "checkpointing": {"interval": "2s", "timeout": "60s", "retained": 3},
            # the local node has the machine's CPUs (2 here): requests below a core each
            "sparkConf": {
                "spark.kubernetes.driver.request.cores": "500m",
                "spark.kubernetes.executor.request.cores": "250m",
            },
            "storage": {
                "endpoint": s.storage_endpoint,
                "bucket": s.bucket,
                "credentialsSecret": {"name": s.credentials_secret},
            },
            "restartPolicy": {
                "type": "OnFailure",
                "maxRestarts": 10,
                "backoff": {"initial": "1s", "max": "5s"},
            },
        },
    }


class Recorder:
    """Samples pods and the job's status every second while the scenario runs."""

    def __init__(self, cluster: Cluster, s: Settings) -> None:
        self.cluster, self.s = cluster, s
        self.executor_pods: set[str] = set()
        self.driver_uids: set[str] = set()
        self.completed_ids: set[int] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="e2e-recorder")

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def sample(self) -> None:
        for pod in self.cluster.pods(self.s.namespace, f"{JOB_LABEL}={self.s.job}"):
            labels = pod["metadata"].get("labels", {})
            if labels.get(SPARK_ROLE) == "executor":  # made by Spark's Kubernetes backend
                self.executor_pods.add(pod["metadata"]["name"])
            elif labels.get(ROLE) == "driver":
                self.driver_uids.add(pod["metadata"]["uid"])
        job = self.cluster.cjob(self.s.namespace, self.s.job)
        completed = (((job or {}).get("status") or {}).get("checkpoints") or {}).get(
            "lastCompleted"
        ) or {}
        if isinstance(completed.get("id"), int):
            self.completed_ids.add(completed["id"])

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.sample()
            except Exception as exc:  # the API may be briefly busy; keep sampling
                self.errors.append(f"{type(exc).__name__}: {exc}")


def check_output(s: Settings, host_endpoint: str) -> dict[str, int]:
    """Read the sink's committed output (through ``host_endpoint``, where the test process
    reaches the S3 server; credentials from ``AWS_*`` in the environment) and count lost,
    duplicated and out-of-order records against the crash-free output."""
    url = s.output_url.replace(s.storage_endpoint, host_endpoint)
    output = list(files.FileSink(url).read_committed())
    report = testing.check_exactly_once(demo.expected_output(s.keys, s.events_per_key), output)
    return {"records": len(output), **report.as_dict()}


def summary_line(summary: Mapping[str, Any]) -> str:
    return "E2E_K8S_SUMMARY " + json.dumps(summary, sort_keys=True)


def say(line: str) -> None:
    """A progress line on the real stderr (pytest's capture would hold it back)."""
    print(f"[e2e-k8s {time.strftime('%H:%M:%S')}] {line}", file=sys.__stderr__, flush=True)
