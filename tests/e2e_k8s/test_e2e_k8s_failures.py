"""Failures on Kubernetes (either target of conftest.py): one that no restart heals, and an operator outage.

A failure no restart can heal: Failed, the reason shown, no loop.

The README's own-pipeline path: the example word count in an image built with
``examples/Dockerfile`` on top of the runtime image, its input and output in S3
given by ``spec.env``. One input line is malformed (the default
``on_error='fail'``). The driver tries that record ``attemptsPerRecord`` (3)
times, restarting its executors from the latest checkpoint, then exits with the
"job failed" code; the operator puts the job in phase Failed with the driver's
reason (file and line) in ``status.error`` and a Warning Event, counts the
driver's own restarts in ``status.restarts`` (the Restarts column), and creates
no second driver pod.

An operator outage: the driver paces its own checkpoints, so with the operator
scaled to zero for 10 checkpoint intervals, checkpoints keep completing and the
newest never gets as old as the CheckpointStale alert's threshold.
"""

from __future__ import annotations

import pathlib
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
import waiting
import yaml
from e2e_k8s_testing import targets
from e2e_k8s_testing.cluster import Cluster
from e2e_k8s_testing.installed import chart_installed
from e2e_k8s_testing.k8s_job import say
from e2e_k8s_testing.scenario import Scenario

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "manifests" / "wordcount.yaml"
MINIMAL = ROOT / "examples" / "manifests" / "minimal.yaml"
MALFORMED_LINE = 301


@pytest.fixture(scope="module")
def pipelines_image(
    images: dict[str, str],
    user_cluster: targets.UserCluster | None,
    load_image: Callable[[str], None],
) -> str:
    """examples/Dockerfile on top of the runtime image, as the README tells users (loaded
    into the cluster's node)."""
    if user_cluster is not None and images["pull_policy"] != "Never":
        pytest.skip("the runtime image is pulled, not built here: no image to build on")
    tag = images["runtime"].replace("cjob-runtime", "cjob-pipelines")
    done = subprocess.run(
        [
            "docker",
            "build",
            "--network",
            "host",
            "-f",
            "examples/Dockerfile",
            "-t",
            tag,
            "--build-arg",
            f"RUNTIME_IMAGE={images['runtime']}",
            "examples",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    load_image(tag)
    return tag


@pytest.fixture(scope="module")
def installed(cluster: Cluster, images: dict[str, str], s3_server) -> Iterator[Scenario]:
    with chart_installed(cluster, images, s3_server, release="failures") as scenario:
        yield scenario


def _status(cluster: Cluster, name: str) -> dict[str, object]:
    return dict((cluster.cjob("streaming", name) or {}).get("status") or {})


def test_a_malformed_record_fails_the_job_with_its_reason_and_no_restart_loop(
    installed: Scenario, pipelines_image: str, s3_server
) -> None:
    cluster = installed.cluster
    s3_server.create_bucket("texts")
    lines = [f'{{"line": "word{i % 11} and word{i % 3}"}}' for i in range(600)]
    lines[MALFORMED_LINE - 1] = '{"line": "cut off'
    s3_server.open_store("texts", "incoming").put("a.jsonl", ("\n".join(lines) + "\n").encode())
    manifest = yaml.safe_load(WORDCOUNT.read_text())
    manifest["spec"]["image"] = pipelines_image
    manifest["spec"]["parallelism"] = 2
    manifest["spec"]["checkpointing"] = {"interval": "1s"}
    manifest["spec"]["restartPolicy"] = {"backoff": {"initial": "1s", "max": "2s"}}
    cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))

    def failed() -> dict[str, object] | None:
        st = _status(cluster, "wordcount")
        return st if st.get("phase") == "Failed" else None

    st = waiting.wait_until(
        failed,
        300,
        "the job in phase Failed",
        interval=1.0,
        explain=lambda: str(_status(cluster, "wordcount")),
    )
    error = str(st.get("error"))
    assert f"a.jsonl line {MALFORMED_LINE}" in error and "malformed record" in error, error
    assert "same record in 3 attempts" in error and "not restarting" in error, error
    warnings = [
        e
        for e in cluster.events("streaming")
        if e.get("type") == "Warning"
        and (e.get("involvedObject") or {}).get("name") == "wordcount"
        and f"line {MALFORMED_LINE}" in str(e.get("message"))
    ]
    assert warnings, "no Warning Event carries the reason"
    table = cluster.kubectl_run("-n", "streaming", "get", "cjob", "wordcount")
    assert " Failed " in table, table

    # No loop: one driver pod was ever created, and the operator never restarted it.
    created = [
        e
        for e in cluster.events("streaming")
        if e.get("reason") == "DriverCreated"
        and (e.get("involvedObject") or {}).get("name") == "wordcount"
    ]
    assert len(created) == 1, [e.get("message") for e in created]
    restarts = st.get("restarts") or {}
    assert isinstance(restarts, dict) and restarts.get("lastReason") != "DriverFailed", restarts
    say(f"  Failed with restarts {restarts}; error: {error[:160]}")
    cluster.kubectl_run("-n", "streaming", "delete", "cjob", "wordcount", "--timeout=120s")


INTERVAL = 2.0


def _driver_metrics(cluster: Cluster, name: str) -> dict[str, float]:
    """``cjob_*`` samples of the driver's ``/metrics`` (no token needed), by metric name.

    Through the API server's pod proxy, as a user reads it; beside the node agent straight
    from the pod's loopback address, which the API server refuses to proxy to
    ("address not allowed")."""
    pods = cluster.pods("streaming", f"checkpointed.dev/job={name},checkpointed.dev/role=driver")
    pod = next(p for p in pods if (p.get("status") or {}).get("phase") == "Running")
    if str(pod["status"]["podIP"]).startswith("127."):
        url = f"http://{pod['status']['podIP']}:8080/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
    else:
        path = f"/api/v1/namespaces/streaming/pods/{pod['metadata']['name']}:8080/proxy/metrics"
        text = cluster.kubectl_run("get", "--raw", path)
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("cjob_") and " " in line:
            metric, value = line.rsplit(" ", 1)
            samples.setdefault(metric.split("{", 1)[0], float(value))
    return samples


def test_checkpoints_go_on_while_the_operator_is_down(
    installed: Scenario, images: dict[str, str]
) -> None:
    """The driver paces its checkpoints itself: an operator outage of 10 intervals ages
    nothing. What the CheckpointStale alert compares stays below its threshold."""
    cluster = installed.cluster
    manifest = yaml.safe_load(MINIMAL.read_text())
    manifest["metadata"]["name"] = "unattended"
    manifest["spec"]["image"] = images["runtime"]
    manifest["spec"]["checkpointing"] = {"interval": f"{INTERVAL:g}s"}
    cluster.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    waiting.wait_until(
        lambda: (
            _status(cluster, "unattended").get("phase") == "Running"
            and _driver_metrics(cluster, "unattended").get("cjob_checkpoints_completed_total", 0)
            >= 1
        ),
        300,
        "the job Running with a checkpoint",
        interval=1.0,
        explain=lambda: str(_status(cluster, "unattended")),
    )
    operator = f"deployment/{installed.s.release}-checkpointed-operator"
    ns = installed.s.operator_namespace
    cluster.kubectl_run("-n", ns, "scale", operator, "--replicas=0")
    waiting.wait_until(lambda: not cluster.pods(ns), 120, "the operator gone", interval=1.0)
    before = _driver_metrics(cluster, "unattended")["cjob_checkpoints_completed_total"]
    worst_age = 0.0

    def ten_more() -> bool:
        nonlocal worst_age
        now = _driver_metrics(cluster, "unattended")
        age = time.time() - now["cjob_last_completed_checkpoint_timestamp_seconds"]
        worst_age = max(worst_age, age)
        assert age < 3 * INTERVAL, f"the last checkpoint is {age:.1f}s old: it would alert"
        return now["cjob_checkpoints_completed_total"] >= before + 10

    waiting.wait_until(
        ten_more, 10 * INTERVAL * 3, "10 checkpoints with the operator down", interval=1.0
    )
    say(
        f"  operator down: 10 checkpoints completed, the newest never older than "
        f"{worst_age:.1f}s (the stale alert fires at {3 * INTERVAL:g}s)"
    )
    cluster.kubectl_run("-n", ns, "scale", operator, "--replicas=1")
    waiting.wait_until(
        lambda: any((p.get("status") or {}).get("phase") == "Running" for p in cluster.pods(ns)),
        120,
        "the operator back",
        interval=1.0,
    )
    cluster.kubectl_run("-n", "streaming", "delete", "cjob", "unattended", "--timeout=120s")
