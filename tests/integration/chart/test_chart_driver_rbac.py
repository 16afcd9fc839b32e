"""The chart's driver RBAC judged by a real API server (the ``kube_api`` fixture: etcd,
kube-apiserver with ``--authorization-mode=Node,RBAC``, kube-controller-manager; no node).

``helm template`` renders the chart's driver ServiceAccount, Role and RoleBinding for one
job namespace; they are applied as the admin. A driver is then started the way the
operator configures it (:func:`cjob_operator.manifests.config.spark_conf`, the master
and credentials pointed at this server, a ServiceAccount token from the TokenRequest API
instead of the mounted one): Spark's own Kubernetes backend, in a process of its own.

* With the RoleBinding, ``kubectl auth can-i`` allows what Spark needs, and Spark
  creates its executor pods (they stay Pending: no node here) and removes them on stop.
* With the RoleBinding deleted, the API server refuses: ``kubectl auth can-i`` says no,
  and the driver fails with the server's own 403 text and the sentence that says what to
  do (:class:`barrier_runtime.spark.errors.KubernetesAccessError`), which the driver
  reports and the operator shows in the job's status (tests/e2e_k8s/
  test_e2e_k8s_readme.py shows that part on a cluster with a node).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import waiting
import yaml
from cjob_operator_testing import envtest

from cjob_operator.manifests import config, objects
from cjob_operator.model import spec as spec_model

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "checkpointed-operator"
ACCOUNT = "cjob-driver"
NOT_HERE = ("spark.kubernetes.driver.pod.name", "spark.kubernetes.executor.podTemplateFile")
"""Keys of the operator's conf that name things of a driver pod, which this one is not."""

DRIVER = """
import json, sys
from barrier_runtime.spark import session
conf = json.loads(sys.argv[1])
try:
    spark = session.build_session(conf.pop("spark.master"), app_name="rbac", parallelism=1,
                                  conf=conf)
except session.SparkUnavailableError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
    sys.exit(0)
print(json.dumps({"started": True}), flush=True)
sys.stdin.read()  # until the test has seen the executor pods
spark.stop()
"""


def _helm() -> str:
    helm = shutil.which("helm", path=str(ROOT / ".venv" / "bin")) or shutil.which("helm")
    if helm is None:
        pytest.skip("helm is not installed: run scripts/install-test-tools.sh")
    return helm


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}: {done.stderr or done.stdout}"
    return done.stdout


@pytest.fixture
def namespace(kube_api: Any) -> str:
    ns = f"rbac-{uuid.uuid4().hex[:6]}"
    _ok(envtest.kubectl(kube_api, "create", "namespace", ns))
    rendered = _ok(
        subprocess.run(
            [
                _helm(),
                "template",
                "cjob",
                str(CHART),
                "--namespace",
                "cjob-system",
                "--set",
                f"driver.namespaces={{{ns}}}",
                "--show-only",
                "templates/serviceaccount.yaml",
                "--show-only",
                "templates/rbac-driver.yaml",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    )
    driver_docs = [
        doc
        for doc in yaml.safe_load_all(rendered)
        if doc and doc["metadata"].get("namespace") == ns  # not the operator's account
    ]
    assert sorted(d["kind"] for d in driver_docs) == ["Role", "RoleBinding", "ServiceAccount"]
    _ok(envtest.kubectl(kube_api, "apply", "-f", "-", stdin=yaml.safe_dump_all(driver_docs)))
    return ns


def _can_i(plane: Any, ns: str, verb: str, resource: str) -> str:
    who = f"--as=system:serviceaccount:{ns}:{ACCOUNT}"
    done = envtest.kubectl(plane, "auth", "can-i", verb, resource, "-n", ns, who)
    return done.stdout.strip()


def _driver_conf(plane: Any, ns: str, tmp_path: Path) -> dict[str, str]:
    token = _ok(envtest.kubectl(plane, "-n", ns, "create", "token", ACCOUNT)).strip()
    (tmp_path / "token").write_text(token)
    job = objects.JobRef(ns, "rbac", "0a0b0c0d")
    spec = spec_model.JobSpec.from_storage(
        {
            "image": "cjob-runtime:dev",
            "pipeline": {"module": "barrier_runtime.demo"},
            "parallelism": 1,
            "storage": {"endpoint": "http://s3:9000", "bucket": "b"},
            "executor": {"instances": 1},
        }
    )
    conf = {k: v for k, v in config.spark_conf(job, spec).items() if k not in NOT_HERE}
    return conf | {
        "spark.master": f"k8s://{plane.url}",
        "spark.kubernetes.authenticate.caCertFile": str(plane.authority.path("ca.crt")),
        "spark.kubernetes.authenticate.oauthTokenFile": str(tmp_path / "token"),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.port": "0",
        "spark.driver.blockManager.port": "0",
        "spark.ui.enabled": "false",
    }


def _start_driver(conf: dict[str, str], tmp_path: Path) -> subprocess.Popen[str]:
    # No kubeconfig and no in-cluster account: Spark's client has the token and nothing else.
    env = {
        **os.environ,
        "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
        "HOME": str(tmp_path),
        "CJOB_JVM_LOG": str(tmp_path / "jvm.log"),
    }
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(conf)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _first_line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(
            f"the driver printed nothing: {proc.stderr.read() if proc.stderr else ''}"
        )
    result: dict[str, Any] = json.loads(line)
    return result


def _executor_pods(plane: Any, ns: str) -> list[str]:
    out = _ok(
        envtest.kubectl(plane, "-n", ns, "get", "pods", "-l", "spark-role=executor", "-o", "name")
    )
    return out.split()


@pytest.mark.timeout(240)
def test_the_chart_role_lets_sparks_backend_create_its_executor_pods(
    kube_api: Any, namespace: str, tmp_path: Path
) -> None:
    for verb, resource in (("create", "pods"), ("create", "configmaps"), ("delete", "pods")):
        assert _can_i(kube_api, namespace, verb, resource) == "yes", (verb, resource)
    assert _can_i(kube_api, namespace, "get", "secrets") == "no"  # no Secrets for drivers
    driver = _start_driver(_driver_conf(kube_api, namespace, tmp_path), tmp_path)
    try:
        assert _first_line(driver) == {"started": True}
        pods = waiting.wait_until(
            lambda: _executor_pods(kube_api, namespace),
            120,
            "Spark's executor pod",
            interval=0.5,
        )
        assert len(pods) == 1, pods
    finally:
        driver.communicate(input="", timeout=120)
    waiting.wait_until(
        lambda: not _executor_pods(kube_api, namespace),
        60,
        "the executor pods deleted by the stopped driver",
        interval=0.5,
    )


@pytest.mark.timeout(240)
def test_the_driver_account_without_its_role_gets_the_servers_403(
    kube_api: Any, namespace: str, tmp_path: Path
) -> None:
    _ok(envtest.kubectl(kube_api, "-n", namespace, "delete", "rolebinding", ACCOUNT))
    waiting.wait_until(
        lambda: _can_i(kube_api, namespace, "create", "pods") == "no",
        30,
        "the API server to stop authorising the driver account",
        interval=0.2,
    )
    driver = _start_driver(_driver_conf(kube_api, namespace, tmp_path), tmp_path)
    result = _first_line(driver)
    driver.communicate(input="", timeout=60)
    assert result.get("error") == "KubernetesAccessError", result
    message = str(result["message"])
    who = f'User "system:serviceaccount:{namespace}:{ACCOUNT}"'
    # the API server's own words, as Spark's client received them
    assert "(403)" in message and "is forbidden" in message and who in message, message
    assert "cannot create resource" in message, message
    assert "needs the driver Role in its namespace" in message, message  # what to do
    assert not _executor_pods(kube_api, namespace)
