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
                       "incremental": false, "triggeredBy": "driver"},
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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from barrier_runtime.checkpoint import types
from barrier_runtime.driver import restart
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import driver, pipeline
from barrier_runtime.storage import object_store

FORMAT_VERSION = 1
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
_MODES = {
    "ExactlyOnce": types.CheckpointingMode.EXACTLY_ONCE,
    "AtLeastOnce": types.CheckpointingMode.AT_LEAST_ONCE,
    "exactly-once": types.CheckpointingMode.EXACTLY_ONCE,
    "at-least-once": types.CheckpointingMode.AT_LEAST_ONCE,
}


_T = TypeVar("_T")
_REQUIRED: Any = object()
_KINDS: dict[object, str] = {int: "an integer", float: "a number", str: "a string"}
_FIX = "fix the CheckpointedJob spec (or the file) and start the driver again"


class JobConfigError(ValueError):
    """The job configuration is missing something or has a wrong value; the message says where."""


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
    value: int | None = _field(doc, "", "maxParallelism", int, None)
    return value


def _section(doc: Mapping[str, Any], name: str, *, required: bool = False) -> dict[str, Any]:
    """``doc[name]`` as an object (``{}`` when optional and absent)."""
    value = doc.get(name)
    if value is None:
        if required:
            raise JobConfigError(f"the job configuration lacks `{name}`: {_FIX}")
        return {}
    if not isinstance(value, dict):
        raise JobConfigError(
            f"`{name}` in the job configuration must be a JSON object, not "
            f"{type(value).__name__}: {_FIX}"
        )
    return value


def _field(
    raw: Mapping[str, Any],
    where: str,
    key: str,
    kind: Callable[[Any], _T],
    default: _T = _REQUIRED,
) -> _T:
    """``raw[key]`` converted by ``kind``; the error names ``where.key`` and its value."""
    name = f"{where}.{key}" if where else key
    if key not in raw or raw[key] is None:
        if default is _REQUIRED:
            raise JobConfigError(f"the job configuration lacks `{name}`: {_FIX}")
        return default
    value = raw[key]
    try:
        if isinstance(value, bool | dict | list):
            raise TypeError(type(value).__name__)
        return kind(value)
    except (TypeError, ValueError) as exc:
        raise JobConfigError(
            f"`{name}` in the job configuration is {value!r}, not {_KINDS.get(kind, kind)}: {_FIX}"
        ) from exc


def _spec(
    doc: Mapping[str, Any],
    environ: Mapping[str, str],
    restore_from: int | str | None,
    master: str | None,
) -> driver.SparkJobSpec:
    version = doc.get("formatVersion", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise JobConfigError(f"unsupported job configuration formatVersion {version}")
    spark_conf = {str(k): str(v) for k, v in _section(doc, "sparkConf").items()}
    master = master or spark_conf.pop("spark.master", None)
    spark_conf.pop("spark.master", None)
    local = master is None or master.startswith("local")
    bind = "127.0.0.1" if local else environ.get(POD_IP_ENV) or ANY_ADDRESS
    if not local:
        master = in_cluster_master(master, environ)
        spark_conf["spark.driver.bindAddress"] = bind
    parallelism = _field(doc, "", "parallelism", int)
    if parallelism < 1:
        raise JobConfigError(f"`parallelism` in the job configuration is {parallelism}: {_FIX}")
    control = _section(doc, "control")
    return driver.SparkJobSpec(
        pipeline=_pipeline(_section(doc, "pipeline", required=True)),
        parallelism=parallelism,
        store=_store(_section(doc, "storage", required=True)),
        checkpoint=_checkpointing(_section(doc, "checkpointing")),
        master=master,
        spark_conf=_local_conf(spark_conf) if local else spark_conf,
        restart=_restart(_section(doc, "restartPolicy")),
        restore_from=restore_from,
        allow_fresh_start=_flag(doc, "allowFreshStart"),
        control=_control(control, _section(doc, "job"), environ, bind),
        coordinator_bind=bind,
        coordinator_port=_field(_section(doc, "coordinator"), "coordinator", "port", int, 0),
        coordinator_host=None if local else spark_conf.get("spark.driver.host"),
        stop_grace_period=_grace_period(_section(doc, "driver")),
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


def _grace_period(raw: dict[str, Any]) -> float:
    where, key = "driver", "terminationGracePeriodSeconds"
    value = _field(raw, where, key, float, driver.DEFAULT_STOP_GRACE_PERIOD)
    if value <= 0:
        raise JobConfigError(f"`{where}.{key}` in the job configuration is {value:g}: {_FIX}")
    return value


def _flag(raw: Mapping[str, Any], key: str) -> bool:
    """An optional boolean (``false`` when absent)."""
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise JobConfigError(
            f"`{key}` in the job configuration is {value!r}, not true or false: {_FIX}"
        )
    return value


def _pipeline(raw: dict[str, Any]) -> pipeline.PipelineRef:
    args = raw.get("args") or []
    if not isinstance(args, list):
        raise JobConfigError(f"`pipeline.args` in the job configuration must be a list: {_FIX}")
    if raw.get("file"):
        return pipeline.PipelineRef(file=str(raw["file"]), args=tuple(map(str, args)))
    if raw.get("module"):
        return pipeline.PipelineRef(module=str(raw["module"]), args=tuple(map(str, args)))
    raise JobConfigError(
        f"`pipeline` in the job configuration needs a `module` or a `file`: {_FIX}"
    )


def _store(raw: dict[str, Any]) -> config_mod.StoreRef:
    endpoint = str(raw.get("endpoint") or "")
    bucket = _field(raw, "storage", "bucket", str)
    root = str(raw.get("root") or "").strip("/")
    access = str(raw.get("accessKeyEnv") or config_mod.ACCESS_KEY_ENV)
    secret = str(raw.get("secretKeyEnv") or config_mod.SECRET_KEY_ENV)
    url = object_store.store_url(endpoint, bucket)
    return config_mod.StoreRef(url, root, access_key_env=access, secret_key_env=secret)


def _checkpointing(raw: dict[str, Any]) -> types.CheckpointConfig:
    mode = str(raw.get("mode", "ExactlyOnce"))
    if mode not in _MODES:
        raise JobConfigError(
            f"`checkpointing.mode` {mode!r} is not ExactlyOnce or AtLeastOnce: {_FIX}"
        )
    by_operator = raw.get("triggeredBy") == "operator"

    def number(key: str, kind: Callable[[Any], _T], default: _T) -> _T:
        return _field(raw, "checkpointing", key, kind, default)

    return types.CheckpointConfig(
        interval=NO_PERIODIC_INTERVAL if by_operator else number("intervalSeconds", float, 30.0),
        timeout=number("timeoutSeconds", float, 600.0),
        min_pause=number("minPauseSeconds", float, 0.0),
        max_concurrent=number("maxConcurrent", int, 1),
        tolerable_failures=number("tolerableFailures", int, 3),
        mode=_MODES[mode],
        unaligned=bool(raw.get("unaligned", False)),
        aligned_timeout=number("alignedTimeoutSeconds", float, 0.0),
        retained=number("retained", int, 3),
    )


def _restart(raw: dict[str, Any]) -> driver.RestartSettings:
    b = _section(raw, "backoff")
    where = "restartPolicy"
    return driver.RestartSettings(
        max_restarts=_field(raw, where, "maxRestarts", int, 10),
        window=_field(raw, where, "windowSeconds", float, 3600.0),
        backoff=restart.Backoff(
            initial=_field(b, f"{where}.backoff", "initialSeconds", float, 10.0),
            max=_field(b, f"{where}.backoff", "maxSeconds", float, 300.0),
            multiplier=_field(b, f"{where}.backoff", "multiplier", float, 2.0),
            jitter=_field(b, f"{where}.backoff", "jitter", float, 0.2),
        ),
        reset_after=_field(raw, where, "resetAfterSeconds", float, 600.0),
    )


def _control(
    raw: dict[str, Any], job: dict[str, Any], environ: Mapping[str, str], bind: str
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
        host=bind,
        port=_field(raw, "control", "port", int),
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
