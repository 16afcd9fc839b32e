"""Pure builders of everything a job runs on: driver Pod, headless Service, ConfigMap, Secret.

Modules: :mod:`.objects` (names, labels, ownership, Service, token Secret),
:mod:`.config` (``job.json``, Spark settings, the ConfigMap) and :mod:`.pods` (the driver
Pod and the executor pod template). The public builders are re-exported here.

The driver is a client-mode Spark driver running ``cjob driver``: it asks the
Kubernetes API for executor pods itself (``spark.master=k8s://…``), names its own
pod in ``spark.kubernetes.driver.pod.name`` so every executor is owned by (and
garbage-collected with) the driver pod, and is reached by executors through the
headless Service. Every object carries an owner reference to the CheckpointedJob.
Credentials never appear in these objects as values: storage keys come from the
user's Secret via ``secretKeyRef`` and the control-API token from the job Secret.
"""

from __future__ import annotations

from cjob_operator.manifests.config import (
    EXECUTOR_PREFIX_MAX,
    config_map,
    executor_pod_name_prefix,
    job_config,
    job_document,
    spark_conf,
)
from cjob_operator.manifests.objects import (
    ACCESS_KEY_ENV,
    ANNOTATION_DEPLOYMENT,
    ANNOTATION_RESTORE,
    ANNOTATION_SPEC_HASH,
    BLOCK_MANAGER_PORT,
    CONFIG_DIR,
    CONFIG_FILE,
    CONTROL_PORT,
    DRIVER_PORT,
    EXECUTOR_TEMPLATE_FILE,
    LABEL_JOB,
    LABEL_ROLE,
    SA_DIR,
    SECRET_KEY_ENV,
    TOKEN_ENV,
    TOKEN_KEY,
    UI_PORT,
    JobRef,
    Obj,
    labels,
    owner_reference,
    service,
    spec_hash,
    token_secret,
)
from cjob_operator.manifests.pods import (
    CONTAINER_SECURITY,
    POD_SECURITY,
    driver_args,
    driver_pod,
    executor_pod_template,
    merge_template,
)

__all__ = [
    "ACCESS_KEY_ENV",
    "ANNOTATION_DEPLOYMENT",
    "ANNOTATION_RESTORE",
    "ANNOTATION_SPEC_HASH",
    "BLOCK_MANAGER_PORT",
    "CONFIG_DIR",
    "CONFIG_FILE",
    "CONTAINER_SECURITY",
    "CONTROL_PORT",
    "DRIVER_PORT",
    "EXECUTOR_PREFIX_MAX",
    "EXECUTOR_TEMPLATE_FILE",
    "LABEL_JOB",
    "LABEL_ROLE",
    "POD_SECURITY",
    "SA_DIR",
    "SECRET_KEY_ENV",
    "TOKEN_ENV",
    "TOKEN_KEY",
    "UI_PORT",
    "JobRef",
    "Obj",
    "config_map",
    "driver_args",
    "driver_pod",
    "executor_pod_name_prefix",
    "executor_pod_template",
    "job_config",
    "job_document",
    "labels",
    "merge_template",
    "owner_reference",
    "service",
    "spark_conf",
    "spec_hash",
    "token_secret",
]
