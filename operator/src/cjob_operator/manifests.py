"""Pure builders of everything a job runs on: driver Pod, headless Service, ConfigMap, Secret.

The driver is a client-mode Spark driver running ``cjob driver``: it asks the
Kubernetes API for executor pods itself (``spark.master=k8s://…``), names its own
pod in ``spark.kubernetes.driver.pod.name`` so every executor is owned by (and
garbage-collected with) the driver pod, and is reached by executors through the
headless Service. Every object carries an owner reference to the CheckpointedJob.
Credentials never appear in these objects as values: storage keys come from the
user's Secret via ``secretKeyRef`` and the control-API token from the job Secret.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from barrier_runtime import job_document as jobdoc
from cjob_operator import API_VERSION, KIND, quantities
from cjob_operator.model import spec as spec_model
from cjob_operator.model.action import RestorePoint

Obj = dict[str, Any]

DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
CONTROL_PORT = 8080
UI_PORT = 4040
CONFIG_DIR = "/etc/cjob"
CONFIG_FILE = f"{CONFIG_DIR}/job.json"
EXECUTOR_TEMPLATE_FILE = f"{CONFIG_DIR}/executor-pod-template.yaml"
TOKEN_KEY = "token"
TOKEN_ENV = jobdoc.TOKEN_ENV
ACCESS_KEY_ENV = jobdoc.ACCESS_KEY_ENV
SECRET_KEY_ENV = jobdoc.SECRET_KEY_ENV
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

LABEL_JOB = "checkpointed.dev/job"
LABEL_ROLE = "checkpointed.dev/role"
ANNOTATION_DEPLOYMENT = "checkpointed.dev/deployment-id"
ANNOTATION_RESTORE = "checkpointed.dev/restore-from"
ANNOTATION_SPEC_HASH = "checkpointed.dev/spec-hash"


class JobRef:
    """The identity of the CheckpointedJob that owns what is built."""

    __slots__ = ("name", "namespace", "uid")

    def __init__(self, namespace: str, name: str, uid: str) -> None:
        self.namespace = namespace
        self.name = name
        self.uid = uid

    def driver_pod(self) -> str:
        return f"{self.name}-driver"

    def service(self) -> str:
        return f"{self.name}-driver"

    def config_map(self) -> str:
        return f"{self.name}-config"

    def token_secret(self) -> str:
        return f"{self.name}-control-token"

    def driver_host(self) -> str:
        return f"{self.service()}.{self.namespace}.svc"


def labels(job: JobRef, role: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "checkpointed-job",
        "app.kubernetes.io/instance": job.name,
        "app.kubernetes.io/component": role,
        "app.kubernetes.io/managed-by": "cjob-operator",
        LABEL_JOB: job.name,
        LABEL_ROLE: role,
    }


def owner_reference(job: JobRef) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(job: JobRef, name: str, role: str, annotations: Mapping[str, str] | None = None) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": job.namespace,
        "labels": labels(job, role),
        "ownerReferences": [owner_reference(job)],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def spec_hash(spec: spec_model.JobSpec) -> str:
    doc = json.dumps(spec.for_storage(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


# -- Spark settings and the job configuration ------------------------------------------


EXECUTOR_PREFIX_MAX = 47
"""Executor pods are named ``{prefix}-exec-{n}``: a prefix of at most 47 characters keeps the
name a DNS-1123 label (63) for any n up to 10 digits. Spark 3.x enforces exactly this limit;
Spark 4 allows a DNS subdomain of up to 237, so the label is the stricter, portable rule."""


def executor_pod_name_prefix(job: JobRef, deployment_id: str) -> str:
    """``{job}-{8 hex}``, unique per driver pod: a new driver never asks for an executor name
    that an executor of the previous driver, still terminating, holds (409 Conflict).

    >>> executor_pod_name_prefix(JobRef("ns", "orders", "u"), "r-1-a")
    'orders-af317ecc'
    """
    digest = hashlib.sha256(f"{job.uid}/{deployment_id}".encode()).hexdigest()[:8]
    base = job.name[: EXECUTOR_PREFIX_MAX - len(digest) - 1].rstrip("-")
    return f"{base}-{digest}"


def spark_conf(job: JobRef, spec: spec_model.JobSpec, deployment_id: str = "") -> dict[str, str]:
    """The user's ``sparkConf`` overlaid with everything the operator manages.

    Memory: ``spec.executor.memory`` is the JVM heap; ``spark.executor.memoryOverhead``
    adds the JVM's native memory and the Python workers' budget
    (:func:`quantities.memory_budget`), so Spark sizes each executor pod at heap +
    overhead + Python. ``spark.executor.pyspark.memory`` is deliberately not set: Spark
    enforces it as an address-space rlimit (``RLIMIT_AS``) per worker, divided by the
    cores, which kills workers whose libraries (Arrow, NumPy) reserve virtual memory far
    beyond what they use; the pod's cgroup limit is the real bound.
    """
    executor_memory = quantities.memory_budget(spec.executor.memory, quantities.EXECUTOR_PYTHON)
    managed = {
        "spark.master": "k8s://https://kubernetes.default.svc",
        "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": job.namespace,
        "spark.kubernetes.container.image": spec.image,
        "spark.kubernetes.container.image.pullPolicy": spec.image_pull_policy,
        "spark.kubernetes.driver.pod.name": job.driver_pod(),
        "spark.kubernetes.executor.podNamePrefix": executor_pod_name_prefix(job, deployment_id),
        "spark.kubernetes.executor.podTemplateFile": EXECUTOR_TEMPLATE_FILE,
        "spark.kubernetes.executor.deleteOnTermination": "true",
        "spark.kubernetes.authenticate.caCertFile": f"{SA_DIR}/ca.crt",
        "spark.kubernetes.authenticate.oauthTokenFile": f"{SA_DIR}/token",
        # Executors call no Kubernetes API (the driver creates and watches them), so they
        # run as the namespace's ``default`` account with no token mounted
        # (``automountServiceAccountToken: false`` in their template); the driver's
        # account would hand every executor its right to create pods.
        "spark.kubernetes.authenticate.executor.serviceAccountName": "default",
        "spark.driver.host": job.driver_host(),
        "spark.driver.bindAddress": "0.0.0.0",  # the driver binds its POD_IP when set
        "spark.driver.port": str(DRIVER_PORT),
        "spark.driver.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.driver.memory": quantities.spark_memory(spec.driver.memory),
        "spark.driver.cores": str(spec.driver.cores),
        "spark.executor.instances": str(spec.executor_instances),
        "spark.executor.cores": str(spec.executor.cores),
        "spark.executor.memory": quantities.spark_memory(spec.executor.memory),
        "spark.executor.memoryOverhead": executor_memory.spark_overhead,
        "spark.dynamicAllocation.enabled": "false",
        "spark.ui.port": str(UI_PORT),
    }
    return {**dict(spec.spark_conf), **managed}


def job_document(
    job: JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str = "",
    prior_failures: tuple[float, ...] = (),
) -> jobdoc.JobDocument:
    """The driver's configuration, typed: the runtime reads it with the same class.

    ``prior_failures`` (``status.restarts.recent``) count against the new driver's
    restart budget: the driver and the operator spend one budget.
    """
    cp = spec.checkpointing
    rp = spec.restart_policy
    return jobdoc.JobDocument(
        job=jobdoc.JobIdentity(job.namespace, job.name, job.uid),
        pipeline=jobdoc.PipelineSection(
            spec.pipeline.module or None, spec.pipeline.file or None, tuple(spec.pipeline.args)
        ),
        parallelism=spec.parallelism,
        max_parallelism=spec.max_parallelism,
        checkpointing=jobdoc.CheckpointingSection(
            interval=cp.interval,
            timeout=cp.timeout,
            min_pause=cp.min_pause,
            max_concurrent=cp.max_concurrent,
            tolerable_failures=cp.tolerable_failures,
            mode=cp.mode.resource_name,
            unaligned=cp.unaligned,
            aligned_timeout=cp.aligned_timeout,
            retained=cp.retained,
            incremental=cp.incremental,
            triggered_by="driver",
        ),
        storage=jobdoc.StorageSection(
            endpoint=spec.storage.endpoint,
            bucket=spec.storage.bucket,
            prefix=spec.storage.prefix,
            root=spec.storage.job_root(job.namespace, job.name),
            access_key_env=ACCESS_KEY_ENV,
            secret_key_env=SECRET_KEY_ENV,
        ),
        restart_policy=jobdoc.RestartSection(
            max_restarts=rp.max_restarts,
            window=rp.window,
            initial=rp.backoff.initial,
            max=rp.backoff.max,
            multiplier=rp.backoff.multiplier,
            jitter=rp.backoff.jitter,
            reset_after=rp.reset_after,
            attempts_per_record=rp.attempts_per_record,
            prior_failures=prior_failures,
        ),
        allow_fresh_start=spec.allow_fresh_start,
        control=jobdoc.ControlSection(CONTROL_PORT, TOKEN_ENV),
        grace_period=spec.driver.termination_grace_period,
        spark_conf=spark_conf(job, spec, deployment_id),
    )


def job_config(
    job: JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str = "",
    prior_failures: tuple[float, ...] = (),
) -> Obj:
    """The JSON document ``cjob driver --config`` reads (no secret values in it)."""
    return job_document(job, spec, deployment_id, prior_failures).for_storage()


# -- objects ----------------------------------------------------------------------------


def config_map(
    job: JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str = "",
    prior_failures: tuple[float, ...] = (),
) -> Obj:
    """``job.json`` and the executor pod template; rewritten for every driver pod
    (``deployment_id``), so each driver names its executors afresh."""
    template = json.dumps(executor_pod_template(job, spec), indent=2, sort_keys=True)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(job, job.config_map(), "config"),
        "data": {
            "job.json": json.dumps(
                job_config(job, spec, deployment_id, prior_failures), indent=2, sort_keys=True
            ),
            "executor-pod-template.yaml": template,
        },
    }


def token_secret(job: JobRef, token: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(job, job.token_secret(), "control-token"),
        "stringData": {TOKEN_KEY: token},
    }


def service(job: JobRef) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(job, job.service(), "driver"),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_JOB: job.name, LABEL_ROLE: "driver"},
            "ports": [
                {"name": "driver-rpc", "port": DRIVER_PORT, "targetPort": DRIVER_PORT},
                {
                    "name": "blockmanager",
                    "port": BLOCK_MANAGER_PORT,
                    "targetPort": BLOCK_MANAGER_PORT,
                },
                {"name": "control", "port": CONTROL_PORT, "targetPort": CONTROL_PORT},
                {"name": "spark-ui", "port": UI_PORT, "targetPort": UI_PORT},
            ],
        },
    }


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
            "name": ACCESS_KEY_ENV,
            "valueFrom": {"secretKeyRef": {"name": creds.name, "key": creds.access_key_key}},
        },
        {
            "name": SECRET_KEY_ENV,
            "valueFrom": {"secretKeyRef": {"name": creds.name, "key": creds.secret_key_key}},
        },
    ]


def _user_env(spec: spec_model.JobSpec) -> list[Obj]:
    """``spec.env``, after the operator's own variables (validation keeps them apart)."""
    return [json.loads(json.dumps(entry)) for entry in spec.env]


def driver_args(restore: RestorePoint | None) -> list[str]:
    args = ["driver", "--config", CONFIG_FILE]
    if restore is not None:
        args += ["--restore-from", restore.arg]
    return args


def driver_pod(
    job: JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str,
    restore: RestorePoint | None,
    default_service_account: str | None = None,
) -> Obj:
    """``default_service_account``: the operator's configured driver account (the chart's
    ``cjob-driver``), used when ``spec.driver.serviceAccount`` is empty; with neither, the
    pod runs as the namespace's ``default`` account, which cannot create executors."""
    annotations = {ANNOTATION_DEPLOYMENT: deployment_id, ANNOTATION_SPEC_HASH: spec_hash(spec)}
    # heap (spark.driver.memory) + JVM native + the coordinator's Python
    driver_memory = quantities.memory_budget(spec.driver.memory, quantities.DRIVER_PYTHON)
    if restore is not None:
        annotations[ANNOTATION_RESTORE] = restore.arg
    container: Obj = {
        "name": "driver",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        # No ``command``: the image's entrypoint (tini, then ``cjob ARGS``) stays PID 1, so
        # SIGTERM reaches the driver, which takes a final savepoint within the pod's
        # terminationGracePeriodSeconds (also in job.json as its deadline) and exits 0.
        "args": driver_args(restore),
        "ports": [
            {"name": "driver-rpc", "containerPort": DRIVER_PORT},
            {"name": "blockmanager", "containerPort": BLOCK_MANAGER_PORT},
            {"name": "control", "containerPort": CONTROL_PORT},
            {"name": "spark-ui", "containerPort": UI_PORT},
        ],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "HOME", "value": "/tmp"},
            {"name": "SPARK_LOCAL_DIRS", "value": "/tmp/spark"},
            {
                "name": TOKEN_ENV,
                "valueFrom": {"secretKeyRef": {"name": job.token_secret(), "key": TOKEN_KEY}},
            },
            *_storage_env(spec),
            *_user_env(spec),
        ],
        "resources": {
            "requests": {"cpu": str(spec.driver.cores), "memory": f"{driver_memory.pod}Mi"},
            "limits": {"memory": f"{driver_memory.pod}Mi"},
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": CONTROL_PORT},
            "periodSeconds": 5,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": CONTROL_PORT},
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
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(job, job.driver_pod(), "driver", annotations),
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


def executor_pod_template(job: JobRef, spec: spec_model.JobSpec) -> Obj:
    """Spark's executor pod template: the user's template under the operator's rules."""
    base: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": labels(job, "executor")},
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
