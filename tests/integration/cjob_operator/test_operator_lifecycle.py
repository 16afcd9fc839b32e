"""The real operator (kopf subprocess) against a real kube-apiserver: create, checkpoints, failures.

Each test uses its own job in one shared operator; pods are "run" by the test
playing the node (writing pods/status as system:node), the fake driver plays the driver.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from cjob_operator_testing.harness import OperatorHarness
from cjob_operator_testing.steps import Manifest, condition, job_json, start_running


def test_create_makes_driver_resources_with_owner_references(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    uid = h.create_job(manifest("alpha"))["metadata"]["uid"]
    pod = h.wait_for(lambda: h.pod("alpha"), "driver pod")
    objects = {}
    for plural, name in (
        ("services", "alpha-driver"),
        ("configmaps", "alpha-config"),
        ("secrets", "alpha-control-token"),
    ):
        obj = h.wait_for(lambda p=plural, n=name: h.find(p, n), f"{plural}/{name}")
        assert obj["metadata"]["ownerReferences"][0]["uid"] == uid
        assert obj["metadata"]["ownerReferences"][0]["controller"] is True
        objects[plural] = obj
    assert pod["metadata"]["ownerReferences"][0]["uid"] == uid

    # The driver: `cjob driver` in client mode, restricted, credentials only by reference.
    spec = pod["spec"]
    container = spec["containers"][0]
    assert "command" not in container  # the image entrypoint (tini → cjob) runs the args
    assert container["args"] == ["driver", "--config", "/etc/cjob/job.json"]
    assert spec["serviceAccountName"] == "cjob-driver"
    assert spec["restartPolicy"] == "Never"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"] == {"drop": ["ALL"]}
    env = {e["name"]: e for e in container["env"]}
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {
        "name": "s3-creds",
        "key": "AWS_ACCESS_KEY_ID",
    }
    assert env["CJOB_CONTROL_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "alpha-control-token"
    assert all("value" not in e or e["name"] in {"HOME", "SPARK_LOCAL_DIRS"} for e in env.values())

    # Spark settings: executors from the Kubernetes API, owned by the driver pod.
    conf = job_json(h, "alpha")["sparkConf"]
    assert conf["spark.master"] == "k8s://https://kubernetes.default.svc"
    assert conf["spark.kubernetes.namespace"] == h.namespace
    assert conf["spark.kubernetes.container.image"] == "registry.local/cjob-runtime:1"
    assert conf["spark.kubernetes.driver.pod.name"] == "alpha-driver"
    assert conf["spark.driver.host"] == f"alpha-driver.{h.namespace}.svc"
    assert conf["spark.driver.port"] == "7078" and conf["spark.driver.blockManager.port"] == "7079"
    assert conf["spark.executor.instances"] == "2" and conf["spark.executor.memory"] == "1024m"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    svc = objects["services"]["spec"]
    assert svc["clusterIP"] == "None"
    assert {p["port"] for p in svc["ports"]} >= {7078, 7079, 8080}

    status = h.wait_for(
        lambda: (
            h.job_status("alpha").get("phase") == "Deploying"
            and "driver" in h.job_status("alpha")
            and h.job_status("alpha")
        ),
        "phase Deploying with the driver recorded",
    )
    assert status["observedGeneration"] == 1
    assert status["driver"]["pod"] == "alpha-driver"
    assert "intent" not in status or status["intent"]["op"] == "deploy"

    h.set_pod_phase("alpha", "Running")
    h.wait_for(lambda: condition(h, "alpha", "Ready").get("status") == "True", "Ready")
    assert h.job_status("alpha")["phase"] == "Running"
    h.wait_for(lambda: {"Deploying", "Running"} <= set(h.event_reasons("alpha")), "events")

    # Secrets never leak into status or events.
    token = base64.b64decode(objects["secrets"]["data"]["token"]).decode()
    assert token not in json.dumps(h.job("alpha")) + json.dumps(h.events("alpha"))


def test_the_driver_paces_periodic_checkpoints_and_the_operator_follows(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    """Periodic checkpoints are the driver's (triggeredBy: driver in job.json), so an
    interval below the operator's tick is honoured; the operator only observes them."""
    h = harness
    start_running(h, manifest, "beta")
    history = h.driver.behaviour(h.namespace, "beta").history
    taken = h.wait_for(
        lambda: len(history) >= 3 and list(history), "three periodic checkpoints", timeout=15
    )
    assert all(e["trigger"] == "periodic" and e["kind"] == "checkpoint" for e in taken)
    gaps = [b["trigger_timestamp"] - a["trigger_timestamp"] for a, b in itertools.pairwise(taken)]
    assert min(gaps) >= 0.9  # interval 1s: never faster than the interval
    assert h.driver.calls_to(h.namespace, "beta", "POST", "/v1/checkpoints") == []
    h.wait_for(
        lambda: (
            (h.job_status("beta").get("checkpoints", {}).get("lastCompleted", {}).get("id", 0)) >= 3
        ),
        "lastCompleted >= 3",
    )
    h.wait_for(
        lambda: condition(h, "beta", "CheckpointHealthy").get("status") == "True",
        "CheckpointHealthy",
    )
    metrics = h.scrape_metrics()
    assert 'cjob_checkpoints_completed_total{job="beta"' in metrics
    assert 'cjob_jobs{job="beta",namespace="jobs",phase="Running"} 1.0' in metrics


def test_checkpoint_failures_turn_checkpoint_health_false(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    h.driver.behaviour(h.namespace, "kappa").fail_next_checkpoints = 100
    start_running(h, manifest, "kappa", checkpointing={"interval": "1s", "tolerableFailures": 1})
    # Wait for the failure count, not just False: on a loaded machine the 1s interval can
    # first make the condition False as CheckpointsStale.
    h.wait_for(
        lambda: condition(h, "kappa", "CheckpointHealthy").get("reason") == "TooManyFailures",
        "CheckpointHealthy False: TooManyFailures",
        timeout=15,
    )
    assert condition(h, "kappa", "CheckpointHealthy")["status"] == "False"
    status = h.job_status("kappa")
    assert status["checkpoints"]["consecutiveFailures"] >= 2
    assert status["checkpoints"]["lastFailed"]["reason"] == "declined"
    h.wait_for(lambda: "CheckpointFailed" in h.event_reasons("kappa"), "event")


def test_failed_driver_is_replaced_with_backoff_from_the_latest_checkpoint(
    harness: OperatorHarness, manifest: Manifest, store_dir: Path
) -> None:
    h = harness
    first = start_running(h, manifest, "gamma")
    h.wait_for(
        lambda: len(h.driver.behaviour(h.namespace, "gamma").history) >= 2, "two checkpoints"
    )
    failed_at = time.monotonic()
    h.set_pod_phase("gamma", "Failed", exit_code=137)  # killed: a restart may heal it
    restarting = h.wait_for(
        lambda: (
            h.job_status("gamma").get("restarts", {}).get("count") == 1 and h.job_status("gamma")
        ),
        "restart recorded",
    )
    assert restarting["phase"] == "Restarting"
    assert restarting["restarts"]["lastReason"] == "DriverFailed"
    assert restarting["restarts"]["nextAttemptTime"]

    def replaced() -> dict[str, Any] | None:
        pod = h.pod("gamma")
        old_id = first["metadata"]["annotations"]["checkpointed.dev/deployment-id"]
        if pod and pod["metadata"]["annotations"]["checkpointed.dev/deployment-id"] != old_id:
            return pod
        return None

    pod = h.wait_for(replaced, "replacement driver pod")
    assert time.monotonic() - failed_at >= 0.9  # backoff.initial is 1s
    root = store_dir / "ckpt" / "cjob" / h.namespace / "gamma" / "checkpoints"
    newest = max(int(p.name.split("-")[1]) for p in root.iterdir() if (p / "_metadata").exists())
    args = pod["spec"]["containers"][0]["args"]
    assert args[-2:] == ["--restore-from", str(newest)]
    h.wait_for(
        lambda: {"DriverFailed", "Restarting"} <= set(h.event_reasons("gamma")), "restart events"
    )
    warning = next(e for e in h.events("gamma") if e["reason"] == "DriverFailed")
    assert warning["type"] == "Warning" and "exit code 137" in warning["message"]
    h.set_pod_phase("gamma", "Running")
    h.wait_for(lambda: h.job_status("gamma").get("phase") == "Running", "Running again")
    assert 'cjob_job_restarts_total{job="gamma"' in h.scrape_metrics()


def test_restart_limit_fails_the_job_with_a_clear_message(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    policy = {
        "type": "Always",
        "maxRestarts": 1,
        "window": "10m",
        "backoff": {"initial": "200ms", "max": "1s", "jitter": 0.0},
    }
    start_running(h, manifest, "iota", restartPolicy=policy)
    h.set_pod_phase("iota", "Failed", exit_code=137)
    h.wait_for(lambda: h.job_status("iota").get("restarts", {}).get("count") == 1, "restart 1")
    # a new pod: the API server creates every pod Pending (kmock left status empty)
    h.wait_for(
        lambda: (pod := h.pod("iota")) is not None and pod["status"]["phase"] == "Pending",
        "replacement pod",
    )
    h.set_pod_phase("iota", "Failed", exit_code=137)
    status = h.wait_for(
        lambda: h.job_status("iota").get("phase") == "Failed" and h.job_status("iota"),
        "phase Failed",
    )
    assert "restartPolicy.maxRestarts" in status["error"]
    h.wait_for(lambda: "RestartLimitReached" in h.event_reasons("iota"), "event")
    # restartNonce brings it back.
    h.patch_spec("iota", {"restartNonce": 1})
    h.wait_for(
        lambda: (
            h.job_status("iota").get("phase") in ("Restarting", "Deploying")
            and (pod := h.pod("iota")) is not None
            and pod["status"]["phase"] == "Pending"
        ),
        "restarted by nonce",
    )


@pytest.mark.parametrize(
    ("job", "code", "reason"), [("tau", 1, "JobFailed"), ("upsilon", 2, "InvalidJob")]
)
def test_a_driver_that_failed_for_good_is_not_restarted(
    harness: OperatorHarness, manifest: Manifest, job: str, code: int, reason: str
) -> None:
    """Exit 1 (the job failed for good) and 2 (its input is wrong): Failed at once."""
    h = harness
    start_running(h, manifest, job)
    h.set_pod_phase(job, "Failed", exit_code=code)
    status = h.wait_for(
        lambda: h.job_status(job).get("phase") == "Failed" and h.job_status(job), "phase Failed"
    )
    assert "not restarting" in status["error"] and f"exit code {code}" in status["error"]
    assert (status.get("restarts") or {}).get("count", 0) == 0
    h.wait_for(lambda: reason in h.event_reasons(job), f"a {reason} event")
    assert h.pod(job)["status"]["phase"] == "Failed"  # the same pod: nothing replaced it
