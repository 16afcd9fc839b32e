"""The real operator (kopf subprocess) against kmock's API server and a fake driver.

Each test uses its own job in one shared operator; pods are "run" by the test
playing the kubelet (setting the pod phase), the fake driver plays the driver.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cjob_operator_testing.harness import OperatorHarness

Manifest = Callable[..., dict[str, Any]]


def start_running(h: OperatorHarness, manifest: Manifest, name: str, **spec: Any) -> dict[str, Any]:
    """Create a job, play the kubelet for its driver, wait for phase Running."""
    h.create_job(manifest(name, **spec))
    pod = h.wait_for(lambda: h.pod(name), f"driver pod of {name}")
    h.set_pod_phase(name, "Running")
    h.wait_for(lambda: h.job_status(name).get("phase") == "Running", f"{name} Running")
    return pod


def job_json(h: OperatorHarness, name: str) -> dict[str, Any]:
    cm = h.find("configmaps", f"{name}-config")
    assert cm is not None
    return dict(json.loads(cm["data"]["job.json"]))


def condition(h: OperatorHarness, name: str, ctype: str) -> dict[str, Any]:
    for cond in h.job_status(name).get("conditions", []):
        if cond["type"] == ctype:
            return dict(cond)
    return {}


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
        "backoff": {"initial": "0.2s", "max": "1s", "jitter": 0.0},
    }
    start_running(h, manifest, "iota", restartPolicy=policy)
    h.set_pod_phase("iota", "Failed", exit_code=137)
    h.wait_for(lambda: h.job_status("iota").get("restarts", {}).get("count") == 1, "restart 1")
    h.wait_for(
        lambda: (pod := h.pod("iota")) is not None and "phase" not in pod.get("status", {}),
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
            and "phase" not in pod.get("status", {})
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


def test_suspend_takes_a_savepoint_and_resume_restores_it(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "delta")
    h.patch_spec("delta", {"state": "Suspended"})
    status = h.wait_for(
        lambda: h.job_status("delta").get("phase") == "Suspended" and h.job_status("delta"),
        "phase Suspended",
    )
    assert h.driver.calls_to(h.namespace, "delta", "POST", "/v1/stop")[0].body == {
        "savepoint": True
    }
    assert h.pod("delta") is None
    savepoint = status["checkpoints"]["lastSavepoint"]["path"]
    assert "/savepoints/sp-" in savepoint
    h.wait_for(
        lambda: {"Suspending", "Suspended", "SavepointCompleted"} <= set(h.event_reasons("delta")),
        "suspend events",
    )

    h.patch_spec("delta", {"state": "Running"})
    pod = h.wait_for(lambda: h.pod("delta"), "resumed driver pod")
    assert pod["spec"]["containers"][0]["args"][-2:] == ["--restore-from", savepoint]
    h.set_pod_phase("delta", "Running")
    h.wait_for(lambda: h.job_status("delta").get("phase") == "Running", "Running again")


def test_upgrade_in_savepoint_mode_redeploys_from_the_savepoint(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "epsilon", upgradeMode="Savepoint")
    h.patch_spec("epsilon", {"image": "registry.local/cjob-runtime:2"})

    def upgraded() -> dict[str, Any] | None:
        pod = h.pod("epsilon")
        image = pod and pod["spec"]["containers"][0]["image"]
        return pod if image == "registry.local/cjob-runtime:2" else None

    pod = h.wait_for(upgraded, "upgraded driver pod")
    stop = h.driver.calls_to(h.namespace, "epsilon", "POST", "/v1/stop")
    assert len(stop) == 1
    saved = h.job_status("epsilon")["checkpoints"]["lastSavepoint"]["path"]
    assert pod["spec"]["containers"][0]["args"][-2:] == ["--restore-from", saved]
    assert (
        job_json(h, "epsilon")["sparkConf"]["spark.kubernetes.container.image"]
        == "registry.local/cjob-runtime:2"
    )
    h.set_pod_phase("epsilon", "Running")
    status = h.wait_for(
        lambda: h.job_status("epsilon").get("phase") == "Running" and h.job_status("epsilon"),
        "Running after upgrade",
    )
    assert status["observedGeneration"] == h.job("epsilon")["metadata"]["generation"]
    assert json.loads(status["lastReconciledSpec"])["image"] == "registry.local/cjob-runtime:2"


def test_manual_savepoint_and_checkpoint_nonces(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "lambda", checkpointing={"interval": "1h"})
    h.patch_spec("lambda", {"savepointTriggerNonce": 1})
    calls = h.wait_for(
        lambda: [
            c
            for c in h.driver.calls_to(h.namespace, "lambda", "POST", "/v1/checkpoints")
            if c.body == {"kind": "savepoint"}
        ],
        "savepoint trigger",
    )
    assert len(calls) == 1
    h.patch_spec("lambda", {"checkpointTriggerNonce": 7})
    h.wait_for(
        lambda: [
            c
            for c in h.driver.calls_to(h.namespace, "lambda", "POST", "/v1/checkpoints")
            if c.body == {"kind": "checkpoint"}
        ],
        "checkpoint trigger",
    )
    # Let several reconciles pass (each observes the driver), then check nothing re-fired.
    seen = len(h.driver.calls_to(h.namespace, "lambda", "GET", "/v1/checkpoints"))
    h.wait_for(
        lambda: len(h.driver.calls_to(h.namespace, "lambda", "GET", "/v1/checkpoints")) >= seen + 4,
        "four more reconciles",
    )
    triggers = h.driver.calls_to(h.namespace, "lambda", "POST", "/v1/checkpoints")
    assert len(triggers) == 2

    # Both nonces are acknowledged with their outcome; the savepoint is in the history.
    def settled() -> dict[str, Any] | None:
        nonces = h.job_status("lambda").get("nonces", {})
        done = [
            nonces.get(f, {}).get("outcome")
            for f in ("savepointTriggerNonce", "checkpointTriggerNonce")
        ]
        return nonces if done == ["Succeeded", "Succeeded"] else None

    nonces = h.wait_for(settled, "nonces acknowledged as Succeeded")
    assert nonces["savepointTriggerNonce"]["value"] == 1
    assert nonces["checkpointTriggerNonce"]["value"] == 7
    [saved] = h.job_status("lambda")["savepoints"]["history"]
    assert (saved["kind"], saved["state"]) == ("Manual", "Completed")
    assert saved["id"] == nonces["savepointTriggerNonce"]["snapshotId"]
    assert "/savepoints/sp-" in saved["path"]
    h.wait_for(
        lambda: {"SavepointCompleted", "NonceSucceeded"} <= set(h.event_reasons("lambda")), "events"
    )


def test_periodic_savepoints_are_taken_and_old_ones_deleted(
    harness: OperatorHarness, manifest: Manifest, store_dir: Path
) -> None:
    h = harness
    start_running(
        h,
        manifest,
        "sigma",
        checkpointing={"interval": "1h"},
        savepoints={"interval": "1s", "retained": 2},
    )
    h.patch_spec("sigma", {"savepointTriggerNonce": 1})  # a manual one, never deleted

    def discarded() -> list[dict[str, Any]] | None:
        history = h.job_status("sigma").get("savepoints", {}).get("history", [])
        gone = [r for r in history if r["state"] == "Discarded"]
        return history if len(gone) >= 2 else None

    h.wait_for(discarded, "two periodic savepoints discarded", timeout=60)
    h.patch_spec("sigma", {"savepoints": {"interval": None}})  # no more: let it settle

    def settled() -> list[dict[str, Any]] | None:
        history = h.job_status("sigma").get("savepoints", {}).get("history", [])
        live = [r for r in history if r["kind"] == "Periodic" and r["state"] != "Discarded"]
        done = len(live) == 2 and all(r["state"] == "Completed" for r in live)
        return history if done else None

    history = h.wait_for(settled, "two periodic savepoints kept")
    periodic = [r for r in history if r["kind"] == "Periodic"]
    manual = [r for r in history if r["kind"] == "Manual"]
    assert [r["state"] for r in manual] == ["Completed"]
    kept = [r["id"] for r in periodic if r["state"] == "Completed"]
    assert all(r["id"] < min(kept) for r in periodic if r["state"] == "Discarded")
    folders = {
        p.name for p in (store_dir / "ckpt/cjob" / h.namespace / "sigma/savepoints").iterdir()
    }
    assert {f"sp-{r['id']:010d}" for r in history if r["state"] == "Completed"} <= folders
    assert not {f"sp-{r['id']:010d}" for r in history if r["state"] == "Discarded"} & folders
    assert "PeriodicSavepointTriggered" in h.event_reasons("sigma")
    assert "SavepointsDiscarded" in h.event_reasons("sigma")


def test_an_upgrade_that_never_runs_is_rolled_back_to_the_last_stable_spec(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "pi", rollback={"enabled": True, "timeout": "3s"})
    status = h.wait_for(
        lambda: (
            h.job_status("pi").get("rollout", {}).get("state") == "Stable" and h.job_status("pi")
        ),
        "the first spec is stable",
    )
    assert json.loads(status["lastStableSpec"])["image"] == "registry.local/cjob-runtime:1"

    h.patch_spec("pi", {"image": "registry.local/cjob-runtime:2"})  # its pod never runs
    h.wait_for(
        lambda: (
            (h.pod("pi") or {}).get("spec", {}).get("containers", [{}])[0].get("image")
            == "registry.local/cjob-runtime:2"
        ),
        "the upgraded driver pod",
    )

    def rolled_back() -> dict[str, Any] | None:
        pod = h.pod("pi")
        image = pod and pod["spec"]["containers"][0]["image"]
        return pod if image == "registry.local/cjob-runtime:1" else None

    pod = rolled_back() or h.wait_for(rolled_back, "the stable spec redeployed")
    assert "--restore-from" in pod["spec"]["containers"][0]["args"]
    assert (
        job_json(h, "pi")["sparkConf"]["spark.kubernetes.container.image"]
        == "registry.local/cjob-runtime:1"
    )
    status = h.job_status("pi")
    assert status["rollout"]["state"] == "RolledBack"
    assert json.loads(status["lastReconciledSpec"])["image"] == "registry.local/cjob-runtime:2"
    h.wait_for(lambda: "RolledBack" in h.event_reasons("pi"), "a RolledBack event")
    h.set_pod_phase("pi", "Running")
    h.wait_for(lambda: h.job_status("pi").get("phase") == "Running", "Running the stable spec")
    seen = len(h.driver.calls_to(h.namespace, "pi", "GET", "/v1/checkpoints"))
    h.wait_for(
        lambda: len(h.driver.calls_to(h.namespace, "pi", "GET", "/v1/checkpoints")) >= seen + 4,
        "four more reconciles",
    )
    assert rolled_back() is not None  # the rejected spec is not deployed again
    assert h.job_status("pi")["rollout"]["state"] == "RolledBack"

    h.patch_spec("pi", {"image": "registry.local/cjob-runtime:3"})  # a new attempt
    h.wait_for(
        lambda: (
            (h.pod("pi") or {}).get("spec", {}).get("containers", [{}])[0].get("image")
            == "registry.local/cjob-runtime:3"
        ),
        "the next spec deployed",
    )
    assert h.job_status("pi")["rollout"]["state"] == "Verifying"


def test_delete_removes_everything_then_the_finalizer(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "zeta")
    assert "checkpointed.dev/finalizer" in h.job("zeta")["metadata"]["finalizers"]
    h.delete_job("zeta")
    h.wait_for(lambda: h.job("zeta") is None, "job gone")
    for plural, name in (
        ("pods", "zeta-driver"),
        ("services", "zeta-driver"),
        ("configmaps", "zeta-config"),
        ("secrets", "zeta-control-token"),
    ):
        assert h.find(plural, name) is None, f"{plural}/{name} leaked"


def test_invalid_spark_conf_is_rejected_with_a_clear_message(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    h.create_job(manifest("eta", sparkConf={"spark.master": "local[*]"}))
    status = h.wait_for(
        lambda: h.job_status("eta").get("phase") == "Failed" and h.job_status("eta"), "rejected"
    )
    assert "sparkConf['spark.master'] is managed by the operator" in status["error"]
    assert h.pod("eta") is None
    h.wait_for(lambda: "InvalidSpec" in h.event_reasons("eta"), "InvalidSpec event")


def test_unusable_checkpoints_fail_instead_of_a_fresh_start(
    harness: OperatorHarness, manifest: Manifest, store_dir: Path
) -> None:
    h = harness
    chk = store_dir / "ckpt" / "cjob" / h.namespace / "theta" / "checkpoints" / "chk-0000000005"
    chk.mkdir(parents=True)
    (chk / "_metadata").write_text("{not json")
    h.create_job(manifest("theta"))
    status = h.wait_for(
        lambda: h.job_status("theta").get("phase") == "Failed" and h.job_status("theta"), "Failed"
    )
    assert "none can be restored" in status["error"] and "allowFreshStart" in status["error"]
    assert h.pod("theta") is None
    h.wait_for(lambda: "NoUsableCheckpoint" in h.event_reasons("theta"), "event")


def test_restore_from_a_chosen_checkpoint_with_restore_nonce(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    first = start_running(h, manifest, "mu")
    h.patch_spec("mu", {"restoreFrom": {"checkpointId": 1}, "restoreNonce": 1})

    def redeployed() -> dict[str, Any] | None:
        pod = h.pod("mu")
        old = first["metadata"]["annotations"]["checkpointed.dev/deployment-id"]
        ok = pod and pod["metadata"]["annotations"]["checkpointed.dev/deployment-id"] != old
        return pod if ok else None

    pod = h.wait_for(redeployed, "driver redeployed from the chosen checkpoint")
    assert pod["spec"]["containers"][0]["args"][-2:] == ["--restore-from", "1"]
    assert h.job_status("mu").get("restarts", {}).get("count", 0) == 0  # not a failure


def test_delete_in_savepoint_mode_takes_a_final_savepoint_first(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    start_running(h, manifest, "nu", upgradeMode="Savepoint")
    h.delete_job("nu")
    h.wait_for(lambda: h.job("nu") is None, "job gone")
    assert len(h.driver.calls_to(h.namespace, "nu", "POST", "/v1/stop")) == 1
    assert h.pod("nu") is None


def test_suspend_without_a_savepoint_after_repeated_stop_failures(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    h.driver.behaviour(h.namespace, "xi").fail_stop = True
    start_running(h, manifest, "xi", checkpointing={"interval": "1s"})
    h.patch_spec("xi", {"state": "suspended"})  # the deprecated alias still works
    h.wait_for(lambda: h.job_status("xi").get("phase") == "Suspended", "Suspended", timeout=30)
    assert len(h.driver.calls_to(h.namespace, "xi", "POST", "/v1/stop")) == 3
    h.wait_for(
        lambda: {"ActionFailed", "SavepointFailed"} <= set(h.event_reasons("xi")), "warning events"
    )
    failure = next(e for e in h.events("xi") if e["reason"] == "SavepointFailed")
    assert failure["type"] == "Warning" and "latest checkpoint will be used" in failure["message"]


def test_probes_and_no_secret_in_the_operator_log(harness: OperatorHarness) -> None:
    assert harness._http_ok(harness.metrics_url + "/healthz")
    assert harness._http_ok(harness.metrics_url + "/readyz")
    log = harness.operator_log()
    for secret in harness.all("secrets"):
        for value in secret.get("data", {}).values():
            assert base64.b64decode(value).decode() not in log


def test_an_operator_restart_resumes_a_pending_restart_from_the_status(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    """Status is the write-ahead log: a restart scheduled by one operator process is
    carried out by the next one, counted once."""
    h = harness
    policy = {
        "type": "Always",
        "maxRestarts": 5,
        "window": "10m",
        "backoff": {"initial": "4s", "max": "4s", "jitter": 0.0},
    }
    first = start_running(h, manifest, "omicron", restartPolicy=policy)
    h.set_pod_phase("omicron", "Failed", exit_code=137)
    recorded = h.wait_for(
        lambda: (
            (h.job_status("omicron").get("intent") or {}).get("op") == "deploy"
            and h.job_status("omicron")["intent"]
        ),
        "intent recorded",
    )
    h.restart_operator()
    old = first["metadata"]["annotations"]["checkpointed.dev/deployment-id"]
    pod = h.wait_for(
        lambda: (
            (p := h.pod("omicron"))
            and p["metadata"]["annotations"]["checkpointed.dev/deployment-id"] != old
            and p
        ),
        "replacement after operator restart",
    )
    # The new operator carried out the recorded intent instead of deciding anew.
    assert pod["metadata"]["annotations"]["checkpointed.dev/deployment-id"] == recorded["id"]
    h.set_pod_phase("omicron", "Running")
    status = h.wait_for(
        lambda: h.job_status("omicron").get("phase") == "Running" and h.job_status("omicron"),
        "Running",
    )
    assert status["restarts"]["count"] == 1


def test_a_refused_pod_creation_is_reported_and_retried(
    harness: OperatorHarness, manifest: Manifest
) -> None:
    h = harness
    message = "exceeded quota: compute, requested: cpu=1, limited: cpu=0"
    h.on_loop(h.kube.refuse_creation, "pods", message)
    try:
        h.create_job(manifest("rho"))
        status = h.wait_for(
            lambda: "quota" in (h.job_status("rho").get("error") or "") and h.job_status("rho"),
            "error in status",
        )
        assert status["phase"] == "Deploying" and status["intent"]["op"] == "deploy"
        h.wait_for(lambda: "ActionFailed" in h.event_reasons("rho"), "ActionFailed event")
    finally:
        h.on_loop(h.kube.refuse_creation, "pods", None)
    h.wait_for(lambda: h.pod("rho"), "pod created once allowed")
    h.set_pod_phase("rho", "Running")
    h.wait_for(
        lambda: (
            h.job_status("rho").get("phase") == "Running" and not h.job_status("rho").get("error")
        ),
        "Running without error",
    )
