"""``job.json`` and Spark's settings: what the driver is configured with, in its ConfigMap.

:func:`job_document` builds the runtime's own typed
:class:`barrier_runtime.job_document.JobDocument` (the driver reads it back with the same
class); :func:`config_map` mounts it with the executor pod template. Pure.
"""

from __future__ import annotations

import hashlib
import json

from barrier_runtime import job_document as jobdoc
from barrier_runtime.core import types
from cjob_operator import quantities
from cjob_operator.manifests import objects, pods
from cjob_operator.model import spec as spec_model

EXECUTOR_PREFIX_MAX = 47
"""Executor pods are named ``{prefix}-exec-{n}``: a prefix of at most 47 characters keeps the
name a DNS-1123 label (63) for any n up to 10 digits. Spark 3.x enforces exactly this limit;
Spark 4 allows a DNS subdomain of up to 237, so the label is the stricter, portable rule."""


def executor_pod_name_prefix(job: objects.JobRef, deployment_id: str) -> str:
    """``{job}-{8 hex}``, unique per driver pod: a new driver never asks for an executor name
    that an executor of the previous driver, still terminating, holds (409 Conflict).

    >>> executor_pod_name_prefix(objects.JobRef("ns", "orders", "u"), "r-1-a")
    'orders-af317ecc'
    """
    digest = hashlib.sha256(f"{job.uid}/{deployment_id}".encode()).hexdigest()[:8]
    base = job.name[: EXECUTOR_PREFIX_MAX - len(digest) - 1].rstrip("-")
    return f"{base}-{digest}"


def spark_conf(
    job: objects.JobRef, spec: spec_model.JobSpec, deployment_id: str = ""
) -> dict[str, str]:
    """The user's ``sparkConf`` overlaid with everything the operator manages.

    Memory: ``spec.executor.memory`` is the JVM heap; ``spark.executor.memoryOverhead``
    adds the JVM's native memory and the Python workers' budget
    (:func:`quantities.memory_budget`; with the ``Disk`` state backend, plus its memory
    per core: one slice of the job runs per core), so Spark sizes each executor pod at
    heap + overhead + Python. ``spark.executor.pyspark.memory`` is deliberately not set: Spark
    enforces it as an address-space rlimit (``RLIMIT_AS``) per worker, divided by the
    cores, which kills workers whose libraries (Arrow, NumPy) reserve virtual memory far
    beyond what they use; the pod's cgroup limit is the real bound.
    """
    cp = spec.checkpointing
    on_disk = cp.state_backend is types.StateBackendKind.DISK
    executor_memory = quantities.memory_budget(
        spec.executor.memory,
        quantities.EXECUTOR_PYTHON,
        state_mib=spec.executor.cores * (cp.state_memory >> 20) if on_disk else 0,
    )
    managed = {
        "spark.master": "k8s://https://kubernetes.default.svc",
        "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": job.namespace,
        "spark.kubernetes.container.image": spec.image,
        "spark.kubernetes.container.image.pullPolicy": spec.image_pull_policy,
        "spark.kubernetes.driver.pod.name": job.driver_pod(),
        "spark.kubernetes.executor.podNamePrefix": executor_pod_name_prefix(job, deployment_id),
        "spark.kubernetes.executor.podTemplateFile": objects.EXECUTOR_TEMPLATE_FILE,
        "spark.kubernetes.executor.deleteOnTermination": "true",
        "spark.kubernetes.authenticate.caCertFile": f"{objects.SA_DIR}/ca.crt",
        "spark.kubernetes.authenticate.oauthTokenFile": f"{objects.SA_DIR}/token",
        # Executors call no Kubernetes API (the driver creates and watches them), so they
        # run as the namespace's ``default`` account with no token mounted
        # (``automountServiceAccountToken: false`` in their template); the driver's
        # account would hand every executor its right to create pods.
        "spark.kubernetes.authenticate.executor.serviceAccountName": "default",
        "spark.driver.host": job.driver_host(),
        "spark.driver.bindAddress": "0.0.0.0",  # the driver binds its POD_IP when set
        "spark.driver.port": str(objects.DRIVER_PORT),
        "spark.driver.blockManager.port": str(objects.BLOCK_MANAGER_PORT),
        "spark.driver.memory": quantities.spark_memory(spec.driver.memory),
        "spark.driver.cores": str(spec.driver.cores),
        "spark.executor.instances": str(spec.executor_instances),
        "spark.executor.cores": str(spec.executor.cores),
        "spark.executor.memory": quantities.spark_memory(spec.executor.memory),
        "spark.executor.memoryOverhead": executor_memory.spark_overhead,
        "spark.dynamicAllocation.enabled": "false",
        "spark.ui.port": str(objects.UI_PORT),
    }
    # the state backend's executor settings, which the user's sparkConf may override
    backend = types.StateBackend(cp.state_backend, cp.state_memory).executor_env()
    env = {f"spark.executorEnv.{k}": v for k, v in backend.items()}
    return {**env, **dict(spec.spark_conf), **managed}


def job_document(
    job: objects.JobRef,
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
            local_recovery=cp.local_recovery,
            state_backend=cp.state_backend.value,
            state_memory=cp.state_memory,
            triggered_by="driver",
        ),
        storage=jobdoc.StorageSection(
            endpoint=spec.storage.endpoint,
            bucket=spec.storage.bucket,
            prefix=spec.storage.prefix,
            root=spec.storage.job_root(job.namespace, job.name),
            access_key_env=objects.ACCESS_KEY_ENV,
            secret_key_env=objects.SECRET_KEY_ENV,
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
        control=jobdoc.ControlSection(objects.CONTROL_PORT, objects.TOKEN_ENV),
        grace_period=spec.driver.termination_grace_period,
        spark_conf=spark_conf(job, spec, deployment_id),
    )


def job_config(
    job: objects.JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str = "",
    prior_failures: tuple[float, ...] = (),
) -> objects.Obj:
    """The JSON document ``cjob driver --config`` reads (no secret values in it)."""
    return job_document(job, spec, deployment_id, prior_failures).for_storage()


def config_map(
    job: objects.JobRef,
    spec: spec_model.JobSpec,
    deployment_id: str = "",
    prior_failures: tuple[float, ...] = (),
) -> objects.Obj:
    """``job.json`` and the executor pod template; rewritten for every driver pod
    (``deployment_id``), so each driver names its executors afresh."""
    template = json.dumps(pods.executor_pod_template(job, spec), indent=2, sort_keys=True)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": objects.meta(job, job.config_map(), "config"),
        "data": {
            "job.json": json.dumps(
                job_config(job, spec, deployment_id, prior_failures), indent=2, sort_keys=True
            ),
            "executor-pod-template.yaml": template,
        },
    }
