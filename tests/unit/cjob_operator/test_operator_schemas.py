"""What the operator builds is valid Kubernetes (offline schemas), for every example job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from cjob_operator import manifests, validate
from cjob_operator.model import spec
from cjob_operator.model.action import RestorePoint

EXAMPLES = sorted((Path(__file__).parents[3] / "examples" / "manifests").glob("*.yaml"))


def jobs() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in EXAMPLES:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CheckpointedJob":
                found.append((path.name, doc))
    return found


@pytest.mark.skipif(not EXAMPLES, reason="no example manifests in examples/manifests")
@pytest.mark.parametrize(("name", "doc"), jobs() or [("none", {})])
def test_example_jobs_are_valid_and_render_valid_kubernetes_objects(
    name: str, doc: dict[str, Any]
) -> None:
    sp = spec.JobSpec.from_storage(doc["spec"])
    assert validate.validate(sp) == [], name
    job = manifests.JobRef(
        doc["metadata"].get("namespace", "default"),
        doc["metadata"]["name"],
        "0f8a6a1e-0000-4000-8000-000000000000",
    )
    objects = [
        manifests.driver_pod(job, sp, "d-1", RestorePoint("42", 42)),
        manifests.service(job),
        manifests.config_map(job, sp),
        manifests.token_secret(job, "token"),
        manifests.executor_pod_template(job, sp),
    ]
    for obj in objects:
        kubernetes_validate.validate(obj, "1.30", strict=True)
