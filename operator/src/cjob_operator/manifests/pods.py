"""The driver Pod and Spark's executor pod template, laid over the user's pod templates.

Credentials never appear as values: storage keys come from the user's Secret via
``secretKeyRef`` and the control-API token from the job Secret. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cjob_operator import quantities
from cjob_operator.manifests import objects
from cjob_operator.model import spec as spec_model
from cjob_operator.model.action import RestorePoint

Obj = dict[str, Any]


POD_SECURITY: Obj = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY: Obj = {
    "runAsNonRoot": True,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _storage_env(spec: spec_model.JobSpec) -> list[Obj]:
    creds = spec.storage.credentials
    if creds is None:
        return []
    return [
        {
            "name": objects.ACCESS_KEY_ENV,
            "valueFrom": {"secretKeyRef": {"name": creds.name, "key": creds.access_key_key}},
        },
        {
            "name": objects.SECRET_KEY_ENV,
            "valueFrom": {"secretKeyRef": {"name": creds.name, "key": creds.secret_key_key}},
        },
    ]


def _user_env(spec: spec_model.JobSpec) -> list[Obj]:
    """``spec.env``, after the operator's own variables (validation keeps them apart)."""
    return [json.loads(json.dumps(entry)) for entry in spec.env]


DRIVER_REQUEST_CORES = "spark.kubernetes.driver.request.cores"


def driver_cpu_request(spec: spec_model.JobSpec) -> str:
    """The driver pod's CPU request: ``sparkConf``'s ``spark.kubernetes.driver.request.cores``
    when set (as spark-submit honours it for the driver pod it makes: a fraction of a core
    on a small cluster, say ``500m``), else ``spec.driver.cores``. Spark's executor pods
    read ``spark.kubernetes.executor.request.cores`` themselves."""
    return spec.spark_conf.get(DRIVER_REQUEST_CORES) or str(spec.driver.cores)


def driver_args(restore: RestorePoint | None) -> list[str]:
    args = ["driver", "--config", objects.CONFIG_FILE]
    if restore is not None:
        args += ["--restore-from", restore.arg]
    return args


def driver_pod(
    job: objects.JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str,
    restore: RestorePoint | None,
    default_service_account: str | None = None,
) -> Obj:
    """``default_service_account``: the operator's configured driver account (the chart's
    ``cjob-driver``), used when ``spec.driver.serviceAccount`` is empty; with neither, the
    pod runs as the namespace's ``default`` account, which cannot create executors."""
    annotations = {
        objects.ANNOTATION_DEPLOYMENT: deployment_id,
        objects.ANNOTATION_SPEC_HASH: objects.spec_hash(spec),
    }
    # heap (spark.driver.memory) + JVM native + the coordinator's Python
    driver_memory = quantities.memory_budget(spec.driver.memory, quantities.DRIVER_PYTHON)
    if restore is not None:
        annotations[objects.ANNOTATION_RESTORE] = restore.arg
    container: Obj = {
        "name": "driver",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        # No ``command``: the image's entrypoint (tini, then ``cjob ARGS``) stays PID 1, so
        # SIGTERM reaches the driver, which takes a final savepoint within the pod's
        # terminationGracePeriodSeconds (also in job.json as its deadline) and exits 0.
        "args": driver_args(restore),
        "ports": [
            {"name": "driver-rpc", "containerPort": objects.DRIVER_PORT},
            {"name": "blockmanager", "containerPort": objects.BLOCK_MANAGER_PORT},
            {"name": "control", "containerPort": objects.CONTROL_PORT},
            {"name": "spark-ui", "containerPort": objects.UI_PORT},
        ],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "HOME", "value": "/tmp"},
            {"name": "SPARK_LOCAL_DIRS", "value": "/tmp/spark"},
            {
                "name": objects.TOKEN_ENV,
                "valueFrom": {
                    "secretKeyRef": {"name": job.token_secret(), "key": objects.TOKEN_KEY}
                },
            },
            *_storage_env(spec),
            *_user_env(spec),
        ],
        "resources": {
            "requests": {"cpu": driver_cpu_request(spec), "memory": f"{driver_memory.pod}Mi"},
            "limits": {"memory": f"{driver_memory.pod}Mi"},
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": objects.CONTROL_PORT},
            "periodSeconds": 5,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": objects.CONTROL_PORT},
            "initialDelaySeconds": 30,
            "periodSeconds": 10,
            "failureThreshold": 6,
        },
        "securityContext": dict(CONTAINER_SECURITY),
        # ``cjob`` writes its one-line failure there; a crash that could not (OOM, JVM)
        # leaves the log's tail instead. The operator puts it in status and an Event.
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            {"name": "config", "mountPath": objects.CONFIG_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": objects.meta(job, job.driver_pod(), "driver", annotations),
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": spec.driver.termination_grace_period,
            "securityContext": dict(POD_SECURITY),
            "containers": [container],
            "volumes": [
                {"name": "config", "configMap": {"name": job.config_map()}},
                {"name": "tmp", "emptyDir": {}},
            ],
        },
    }
    account = spec.driver.service_account or default_service_account
    if account:
        pod["spec"]["serviceAccountName"] = account
    return merge_template(spec.driver.pod_template, pod, "driver")


def executor_pod_template(job: objects.JobRef, spec: spec_model.JobSpec) -> Obj:
    """Spark's executor pod template: the user's template under the operator's rules."""
    base: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": objects.labels(job, "executor")},
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": dict(POD_SECURITY),
            "containers": [
                {
                    "name": "executor",
                    "securityContext": dict(CONTAINER_SECURITY),
                    "env": [
                        {"name": "HOME", "value": "/tmp"},
                        *_storage_env(spec),
                        *_user_env(spec),
                    ],
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }
    return merge_template(spec.executor.pod_template, base, "executor")


def merge_template(template: Mapping[str, Any], pod: Obj, main: str) -> Obj:
    """Lay ``pod`` over the user's ``template``: operator fields win, lists are joined.

    The main container (named ``main``) merges with the template's container of the
    same name; other template containers stay as sidecars. Security contexts are
    always the operator's.
    """
    if not template:
        return pod
    merged: Obj = json.loads(json.dumps(template))
    meta = merged.setdefault("metadata", {})
    for key, value in pod.get("metadata", {}).items():
        if key in ("labels", "annotations"):
            meta[key] = {**meta.get(key, {}), **value}
        else:
            meta[key] = value
    tspec = merged.setdefault("spec", {})
    for key, value in pod["spec"].items():
        if key == "containers":
            tspec[key] = _merge_containers(tspec.get(key, []), value, main)
        elif key == "volumes":
            ours = {v["name"] for v in value}
            tspec[key] = [v for v in tspec.get(key, []) if v.get("name") not in ours] + value
        else:
            tspec[key] = value
    for key in ("apiVersion", "kind"):
        if key in pod:
            merged[key] = pod[key]
    return merged


def _merge_containers(theirs: list[Obj], ours: list[Obj], main: str) -> list[Obj]:
    result = [c for c in theirs if c.get("name") != main]
    their_main = next((c for c in theirs if c.get("name") == main), {})
    for container in ours:
        if container.get("name") != main:
            result.append(container)
            continue
        combined = {**their_main, **container}
        for key in ("env", "volumeMounts", "ports"):
            if key in their_main:
                names = {e.get("name") or e.get("mountPath") for e in container.get(key, [])}
                extra = [
                    e for e in their_main[key] if (e.get("name") or e.get("mountPath")) not in names
                ]
                combined[key] = container.get(key, []) + extra
        result.insert(0, combined)
    return result
