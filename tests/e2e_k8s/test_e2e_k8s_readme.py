"""The README's cluster path, and a driver without its Role (either target of conftest.py).

* The README's cluster-wide install and ``kubectl apply -f examples/manifests/minimal.yaml``
  with only the image name changed reach phase Running with completed checkpoints.
* A driver whose service account has no Role is refused with 403 by the API server's
  RBAC, and the operator shows that reason in the job's status and in a Warning Event.
  (tests/integration/chart/test_chart_driver_rbac.py shows the same 403 for the chart's
  own driver account with its RoleBinding removed, on an API server without a node.)
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
import waiting
import yaml
from e2e_k8s_testing.cluster import Cluster
from e2e_k8s_testing.installed import chart_installed
from e2e_k8s_testing.scenario import Scenario

ROOT = pathlib.Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "examples" / "manifests" / "minimal.yaml"


@pytest.fixture(scope="module")
def installed(cluster: Cluster, images: dict[str, str], s3_server) -> Iterator[Scenario]:
    with chart_installed(cluster, images, s3_server, release="readme") as scenario:
        yield scenario


def _status(cluster: Cluster, namespace: str, name: str) -> dict[str, object]:
    return dict((cluster.cjob(namespace, name) or {}).get("status") or {})


def test_the_minimal_example_reaches_running_with_checkpoints(
    installed: Scenario, images: dict[str, str]
) -> None:
    cluster = installed.cluster
    manifest = yaml.safe_load(MINIMAL.read_text())
    manifest["spec"]["image"] = images["runtime"]  # the only change: where the image is
    cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    name = manifest["metadata"]["name"]

    def running_with_checkpoint() -> bool:
        st = _status(cluster, "streaming", name)
        last = (st.get("checkpoints") or {}).get("lastCompleted") or {}  # type: ignore[attr-defined]
        return st.get("phase") == "Running" and isinstance(last.get("id"), int)

    waiting.wait_until(
        running_with_checkpoint,
        300,
        "the minimal job Running with a completed checkpoint",
        interval=1.0,
        explain=lambda: str(_status(cluster, "streaming", name)),
    )
    table = cluster.kubectl_run("-n", "streaming", "get", "cjob", name)
    assert " Running " in table, table
    cluster.kubectl_run("-n", "streaming", "delete", "cjob", name, "--timeout=120s")


def test_a_driver_without_its_role_is_refused_with_403_and_the_operator_says_so(
    installed: Scenario, images: dict[str, str]
) -> None:
    cluster = installed.cluster
    cluster.kubectl_run("-n", "streaming", "create", "serviceaccount", "no-rights")
    manifest = yaml.safe_load(MINIMAL.read_text())
    manifest["metadata"]["name"] = "unprivileged"
    manifest["spec"]["image"] = images["runtime"]
    manifest["spec"]["driver"] = {"serviceAccount": "no-rights"}
    manifest["spec"]["restartPolicy"] = {"type": "Never"}
    cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))

    def refused() -> str | None:
        error = _status(cluster, "streaming", "unprivileged").get("error")
        return error if isinstance(error, str) and "403" in error else None

    error = waiting.wait_until(
        refused,
        240,
        "the 403 in the job's status",
        interval=1.0,
        explain=lambda: str(_status(cluster, "streaming", "unprivileged")),
    )
    assert "forbidden" in error and "system:serviceaccount:streaming:no-rights" in error, error
    assert "driver Role" in error, error  # what to do about it
    warnings = [
        e
        for e in cluster.events("streaming")
        if e.get("type") == "Warning"
        and (e.get("involvedObject") or {}).get("name") == "unprivileged"
        and "403" in str(e.get("message"))
    ]
    assert warnings, "no Warning Event carries the 403"
    cluster.kubectl_run("-n", "streaming", "delete", "cjob", "unprivileged", "--timeout=120s")
