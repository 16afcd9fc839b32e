"""The job configuration ``cjob driver --config job.json`` runs (written by the operator).

The document is one typed definition, :class:`barrier_runtime.job_document.JobDocument`,
that ``cjob_operator.manifests.job_config`` writes and this module reads, checks and
turns into the driver's :class:`~.driver.SparkJobSpec`. It holds no secret values, only the
*names* of the environment variables that do (``storage.accessKeyEnv``,
``storage.secretKeyEnv``, ``control.tokenEnv``)::

    {"formatVersion": 1,
     "job": {"namespace": "team-a", "name": "orders", "uid": "…"},
     "pipeline": {"module": "jobs.orders", "args": []},   # or "file"
     "parallelism": 4, "maxParallelism": 128,
     "checkpointing": {"intervalSeconds": 30, "timeoutSeconds": 600, "minPauseSeconds": 0,
                       "maxConcurrent": 1, "tolerableFailures": 3, "mode": "ExactlyOnce",
                       "unaligned": false, "alignedTimeoutSeconds": 0, "retained": 3,
                       "incremental": false, "localRecovery": false,
                       "stateBackend": "memory", "stateMemoryBytes": 268435456,
                       "triggeredBy": "driver"},
     "storage": {"endpoint": "http://minio:9000", "bucket": "cjob", "prefix": "cjob",
                 "root": "cjob/team-a/orders",
                 "accessKeyEnv": "AWS_ACCESS_KEY_ID", "secretKeyEnv": "AWS_SECRET_ACCESS_KEY"},
     "restartPolicy": {"maxRestarts": 10, "windowSeconds": 3600,
                       "backoff": {"initialSeconds": 10, "maxSeconds": 300,
                                   "multiplier": 2.0, "jitter": 0.2},
                       "resetAfterSeconds": 600},
     "allowFreshStart": false,
     "control": {"port": 8080, "tokenEnv": "CJOB_CONTROL_TOKEN"},
     "driver": {"terminationGracePeriodSeconds": 60},
     "sparkConf": {"spark.master": "k8s://…", "spark.driver.host": "…", …}}

``driver.terminationGracePeriodSeconds`` (optional, default 60) is the driver pod's
grace period: on SIGTERM the driver takes a final savepoint before that deadline
(:mod:`barrier_runtime.driver.graceful_stop`).

Optional ``"coordinator": {"port": 7080}`` fixes the port workers connect
back to (default: any free port; a NetworkPolicy or a non-headless Service
needs a fixed one).

``checkpointing.triggeredBy == "operator"`` means something else triggers every
checkpoint through the control API, so the driver does not trigger periodic ones
(it still times them out). The operator writes ``"driver"``: the coordinator
paces periodic checkpoints itself and the operator only triggers on-demand ones.
A ``file://`` endpoint names a local directory holding the bucket as a
sub-directory (local test runs).
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Mapping
from typing import Any

from barrier_runtime import job_document
from barrier_runtime.core import types
from barrier_runtime.driver import restart
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import driver, pipeline
from barrier_runtime.storage import object_store

FORMAT_VERSION = job_document.FORMAT_VERSION
ANY_ADDRESS = "0.0.0.0"
"""In a pod without ``POD_IP``: listen on every interface (probes, the operator, executors)."""
POD_IP_ENV = "POD_IP"
"""The pod's own address (a ``status.podIP`` fieldRef): what the driver listens on in a pod,
as Spark's own cluster mode does, so nothing depends on owning the pod's whole network."""
IN_CLUSTER_MASTER = "k8s://https://kubernetes.default.svc"
"""The API server as every pod sees it; the port comes from ``KUBERNETES_SERVICE_PORT``
(443 on most clusters), as client-go's in-cluster configuration takes it."""
NO_PERIODIC_INTERVAL = 10.0**9
"""The coordinator's interval when the operator triggers checkpoints (about 30 years)."""
JobConfigError = job_document.JobConfigError


def read(path: str | pathlib.Path) -> dict[str, Any]:
    try:
        doc = json.loads(pathlib.Path(path).read_text())
    except OSError as exc:
        raise JobConfigError(
            f"cannot read the job configuration {path} ({exc.strerror}): check the --config path"
        ) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise JobConfigError(
            f"the job configuration {path} is not JSON ({exc}): fix the file or write it again"
        ) from exc
    if not isinstance(doc, dict):
        raise JobConfigError(
            f"the job configuration {path} must be a JSON object, not {type(doc).__name__}: "
            "fix the file or write it again"
        )
    return doc


def to_spec(
    doc: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    restore_from: int | str | None = None,
    master: str | None = None,
) -> driver.SparkJobSpec:
    """The driver's spec for ``doc``; ``master`` overrides ``sparkConf["spark.master"]``."""
    return _spec(doc, environ, restore_from, master)


def max_parallelism(doc: Mapping[str, Any]) -> int | None:
    """``maxParallelism`` if the configuration fixes it (the pipeline must agree)."""
    return job_document.JobDocument.from_storage(doc).max_parallelism


def _spec(
    raw: Mapping[str, Any],
    environ: Mapping[str, str],
    restore_from: int | str | None,
    master: str | None,
) -> driver.SparkJobSpec:
    doc = job_document.JobDocument.from_storage(raw)
    spark_conf = dict(doc.spark_conf)
    master = master or spark_conf.pop("spark.master", None)
    spark_conf.pop("spark.master", None)
    local = master is None or master.startswith("local")
    bind = "127.0.0.1" if local else environ.get(POD_IP_ENV) or ANY_ADDRESS
    if not local:
        master = in_cluster_master(master, environ)
        spark_conf["spark.driver.bindAddress"] = bind
    return driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef(
            module=doc.pipeline.module, file=doc.pipeline.file, args=doc.pipeline.args
        ),
        parallelism=doc.parallelism,
        store=_store(doc.storage),
        checkpoint=_checkpointing(doc.checkpointing),
        master=master,
        spark_conf=_local_conf(spark_conf) if local else spark_conf,
        restart=_restart(doc.restart_policy),
        restore_from=restore_from,
        allow_fresh_start=doc.allow_fresh_start,
        control=_control(doc, environ, bind),
        coordinator_bind=bind,
        coordinator_port=doc.coordinator_port,
        coordinator_host=None if local else spark_conf.get("spark.driver.host"),
        stop_grace_period=doc.grace_period,
    )


def in_cluster_master(master: str | None, environ: Mapping[str, str]) -> str | None:
    """``master`` with the in-cluster API server's port when it names that server.

    >>> in_cluster_master(IN_CLUSTER_MASTER, {"KUBERNETES_SERVICE_PORT": "6443"})
    'k8s://https://kubernetes.default.svc:6443'
    >>> in_cluster_master("k8s://https://api.example:443", {"KUBERNETES_SERVICE_PORT": "6443"})
    'k8s://https://api.example:443'
    """
    port = environ.get("KUBERNETES_SERVICE_PORT")
    if master != IN_CLUSTER_MASTER or not port:
        return master
    return f"{master}:{port}"


def _store(raw: job_document.StorageSection) -> config_mod.StoreRef:
    url = object_store.store_url(raw.endpoint, raw.bucket)
    return config_mod.StoreRef(
        url, raw.root, access_key_env=raw.access_key_env, secret_key_env=raw.secret_key_env
    )


def _checkpointing(raw: job_document.CheckpointingSection) -> types.CheckpointConfig:
    return types.CheckpointConfig(
        interval=NO_PERIODIC_INTERVAL if raw.triggered_by == "operator" else raw.interval,
        timeout=raw.timeout,
        min_pause=raw.min_pause,
        max_concurrent=raw.max_concurrent,
        tolerable_failures=raw.tolerable_failures,
        mode=types.CheckpointingMode(raw.mode),
        unaligned=raw.unaligned,
        aligned_timeout=raw.aligned_timeout,
        retained=raw.retained,
        incremental=raw.incremental,
        local_recovery=raw.local_recovery,
        state_backend=types.StateBackend(
            types.StateBackendKind(raw.state_backend), raw.state_memory
        ),
    )


def _restart(raw: job_document.RestartSection) -> driver.RestartSettings:
    return driver.RestartSettings(
        max_restarts=raw.max_restarts,
        window=raw.window,
        backoff=restart.Backoff(
            initial=raw.initial, max=raw.max, multiplier=raw.multiplier, jitter=raw.jitter
        ),
        reset_after=raw.reset_after,
        attempts_per_record=raw.attempts_per_record,
        prior_failures=raw.prior_failures,
    )


def _control(
    doc: job_document.JobDocument, environ: Mapping[str, str], bind: str
) -> driver.ControlSettings | None:
    if doc.control is None:
        return None
    token = environ.get(doc.control.token_env)
    if not token:
        raise JobConfigError(
            f"the control API token is missing: set the environment variable "
            f"{doc.control.token_env}"
        )
    return driver.ControlSettings(
        host=bind,
        port=doc.control.port,
        token=token,
        namespace=doc.job.namespace or None,
        job_name=doc.job.name or None,
    )


def _local_conf(conf: dict[str, str]) -> dict[str, str]:
    """Keep only settings that make sense for a local master (no k8s or pod addresses)."""
    dropped = (
        "spark.kubernetes.",
        "spark.driver.host",
        "spark.driver.bindAddress",
        "spark.driver.port",
        "spark.driver.blockManager.port",
        "spark.executor.instances",
    )
    return {k: v for k, v in conf.items() if not k.startswith(dropped)}
