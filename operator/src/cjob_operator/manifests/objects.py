"""Names, labels and the small objects of a job: ownership, the headless Service, the token Secret.

Every object carries an owner reference to the CheckpointedJob (:func:`owner_reference`)
and the job's labels (:func:`labels`); :class:`JobRef` names them all. Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from barrier_runtime import control_document
from barrier_runtime import job_document as jobdoc
from cjob_operator import API_VERSION, KIND
from cjob_operator.model import spec as spec_model

Obj = dict[str, Any]

DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
CONTROL_PORT = control_document.DEFAULT_PORT
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


def meta(job: JobRef, name: str, role: str, annotations: Mapping[str, str] | None = None) -> Obj:
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


def token_secret(job: JobRef, token: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": meta(job, job.token_secret(), "control-token"),
        "stringData": {TOKEN_KEY: token},
    }


def service(job: JobRef) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(job, job.service(), "driver"),
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
