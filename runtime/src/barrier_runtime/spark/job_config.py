"""The job configuration ``cjob driver --config job.json`` runs (written by the operator).

The document is built by ``cjob_operator.manifests.job_config``; this module
is the runtime's half of that contract. It holds no secret values, only the
*names* of the environment variables that do (``storage.accessKeyEnv``,
``storage.secretKeyEnv``, ``control.tokenEnv``)::

    {"formatVersion": 1,
     "job": {"namespace": "team-a", "name": "orders", "uid": "…"},
     "pipeline": {"module": "jobs.orders", "args": []},   # or "file"
     "parallelism": 4, "maxParallelism": 128,
     "checkpointing": {"intervalSeconds": 30, "timeoutSeconds": 600, "minPauseSeconds": 0,
                       "maxConcurrent": 1, "tolerableFailures": 3, "mode": "ExactlyOnce",
                       "unaligned": false, "alignedTimeoutSeconds": 0, "retained": 3,
                       "incremental": false, "triggeredBy": "operator"},
     "storage": {"endpoint": "http://minio:9000", "bucket": "cjob", "prefix": "cjob",
                 "root": "cjob/team-a/orders",
                 "accessKeyEnv": "AWS_ACCESS_KEY_ID", "secretKeyEnv": "AWS_SECRET_ACCESS_KEY"},
     "restartPolicy": {"maxRestarts": 10, "windowSeconds": 3600,
                       "backoff": {"initialSeconds": 10, "maxSeconds": 300,
                                   "multiplier": 2.0, "jitter": 0.2}},
     "control": {"port": 8080, "tokenEnv": "CJOB_CONTROL_TOKEN"},
     "sparkConf": {"spark.master": "k8s://…", "spark.driver.host": "…", …}}

Optional ``"coordinator": {"port": 7080}`` fixes the port workers connect
back to (default: any free port; a NetworkPolicy or a non-headless Service
needs a fixed one).

``checkpointing.triggeredBy == "operator"`` means the operator triggers
checkpoints through the control API on its own timer, so the driver does not
trigger periodic ones (it still times them out). A ``file://`` endpoint names
a local directory holding the bucket as a sub-directory (local test runs).
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Mapping
from typing import Any

from barrier_runtime.checkpoint import types
from barrier_runtime.driver import restart
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import driver, pipeline

FORMAT_VERSION = 1
ANY_ADDRESS = "0.0.0.0"
"""In a pod: listen on every interface (probes, the operator, executors)."""
NO_PERIODIC_INTERVAL = 10.0**9
"""The coordinator's interval when the operator triggers checkpoints (about 30 years)."""
_MODES = {
    "ExactlyOnce": types.CheckpointingMode.EXACTLY_ONCE,
    "AtLeastOnce": types.CheckpointingMode.AT_LEAST_ONCE,
    "exactly-once": types.CheckpointingMode.EXACTLY_ONCE,
    "at-least-once": types.CheckpointingMode.AT_LEAST_ONCE,
}


class JobConfigError(ValueError):
    """The job configuration is missing something or has a wrong value; the message says where."""


def read(path: str | pathlib.Path) -> dict[str, Any]:
    try:
        doc = json.loads(pathlib.Path(path).read_text())
    except OSError as exc:
        raise JobConfigError(f"cannot read the job configuration {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise JobConfigError(f"the job configuration {path} is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise JobConfigError(f"the job configuration {path} must be a JSON object")
    return doc


def to_spec(
    doc: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    restore_from: int | str | None = None,
    master: str | None = None,
) -> driver.SparkJobSpec:
    """The driver's spec for ``doc``; ``master`` overrides ``sparkConf["spark.master"]``."""
    try:
        return _spec(doc, environ, restore_from, master)
    except (KeyError, TypeError) as exc:
        raise JobConfigError(f"the job configuration lacks or mistypes {exc}") from exc


def _spec(
    doc: Mapping[str, Any],
    environ: Mapping[str, str],
    restore_from: int | str | None,
    master: str | None,
) -> driver.SparkJobSpec:
    version = doc.get("formatVersion", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise JobConfigError(f"unsupported job configuration formatVersion {version}")
    spark_conf = {str(k): str(v) for k, v in dict(doc.get("sparkConf") or {}).items()}
    master = master or spark_conf.pop("spark.master", None)
    spark_conf.pop("spark.master", None)
    local = master is None or master.startswith("local")
    parallelism = int(doc["parallelism"])
    control = dict(doc.get("control") or {})
    return driver.SparkJobSpec(
        pipeline=_pipeline(dict(doc["pipeline"])),
        parallelism=parallelism,
        store=_store(dict(doc["storage"])),
        checkpoint=_checkpointing(dict(doc.get("checkpointing") or {})),
        master=master,
        spark_conf=_local_conf(spark_conf) if local else spark_conf,
        restart=_restart(dict(doc.get("restartPolicy") or {})),
        restore_from=restore_from,
        control=_control(control, dict(doc.get("job") or {}), environ, local),
        coordinator_bind="127.0.0.1" if local else ANY_ADDRESS,
        coordinator_port=int(dict(doc.get("coordinator") or {}).get("port", 0)),
        coordinator_host=None if local else spark_conf.get("spark.driver.host"),
    )


def _pipeline(raw: dict[str, Any]) -> pipeline.PipelineRef:
    args = tuple(str(a) for a in raw.get("args", ()))
    if raw.get("file"):
        return pipeline.PipelineRef(file=str(raw["file"]), args=args)
    if raw.get("module"):
        return pipeline.PipelineRef(module=str(raw["module"]), args=args)
    raise JobConfigError("pipeline needs a `module` or a `file`")


def _store(raw: dict[str, Any]) -> config_mod.StoreRef:
    endpoint = str(raw.get("endpoint") or "")
    bucket = str(raw["bucket"])
    root = str(raw.get("root") or "").strip("/")
    access = str(raw.get("accessKeyEnv") or config_mod.ACCESS_KEY_ENV)
    secret = str(raw.get("secretKeyEnv") or config_mod.SECRET_KEY_ENV)
    if endpoint.startswith("file://"):
        url = str(pathlib.Path(endpoint[len("file://") :]) / bucket)
    elif endpoint:
        url = f"s3://{bucket}?endpoint={endpoint}"
    else:
        url = f"s3://{bucket}"
    return config_mod.StoreRef(url, root, access_key_env=access, secret_key_env=secret)


def _checkpointing(raw: dict[str, Any]) -> types.CheckpointConfig:
    mode = str(raw.get("mode", "ExactlyOnce"))
    if mode not in _MODES:
        raise JobConfigError(f"checkpointing.mode {mode!r} is not ExactlyOnce or AtLeastOnce")
    by_operator = raw.get("triggeredBy") == "operator"
    return types.CheckpointConfig(
        interval=NO_PERIODIC_INTERVAL if by_operator else float(raw.get("intervalSeconds", 30)),
        timeout=float(raw.get("timeoutSeconds", 600)),
        min_pause=float(raw.get("minPauseSeconds", 0)),
        max_concurrent=int(raw.get("maxConcurrent", 1)),
        tolerable_failures=int(raw.get("tolerableFailures", 3)),
        mode=_MODES[mode],
        unaligned=bool(raw.get("unaligned", False)),
        aligned_timeout=float(raw.get("alignedTimeoutSeconds", 0)),
        retained=int(raw.get("retained", 3)),
    )


def _restart(raw: dict[str, Any]) -> driver.RestartSettings:
    b = dict(raw.get("backoff") or {})
    return driver.RestartSettings(
        max_restarts=int(raw.get("maxRestarts", 10)),
        window=float(raw.get("windowSeconds", 3600)),
        backoff=restart.Backoff(
            initial=float(b.get("initialSeconds", 10)),
            max=float(b.get("maxSeconds", 300)),
            multiplier=float(b.get("multiplier", 2.0)),
            jitter=float(b.get("jitter", 0.2)),
        ),
        reset_after=float(raw.get("resetAfterSeconds", 600)),
    )


def _control(
    raw: dict[str, Any], job: dict[str, Any], environ: Mapping[str, str], local: bool
) -> driver.ControlSettings | None:
    if "port" not in raw:
        return None
    token_env = str(raw.get("tokenEnv") or "CJOB_CONTROL_TOKEN")
    token = environ.get(token_env)
    if not token:
        raise JobConfigError(
            f"the control API token is missing: set the environment variable {token_env}"
        )
    return driver.ControlSettings(
        host="127.0.0.1" if local else ANY_ADDRESS,
        port=int(raw["port"]),
        token=token,
        namespace=job.get("namespace"),
        job_name=job.get("name"),
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
