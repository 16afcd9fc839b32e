"""``job.json``: the one definition of what the operator tells a driver, typed on both sides.

The operator builds a :class:`JobDocument` and mounts ``for_storage()`` as ``job.json``
(``cjob_operator.manifests.job_config``); ``cjob driver --config job.json`` reads it back
with :meth:`JobDocument.from_storage`, which checks every field and names the one that
is wrong (:class:`JobConfigError`). The document holds no secret values, only the
*names* of the environment variables that do (``storage.accessKeyEnv``,
``storage.secretKeyEnv``, ``control.tokenEnv``). Pure: no I/O, no pyspark, no
Kubernetes client, so both images import it.

>>> doc = JobDocument(
...     job=JobIdentity("team-a", "orders", "uid-1"),
...     pipeline=PipelineSection(module="jobs.orders"), parallelism=4,
...     storage=StorageSection("http://minio:9000", "ckpt", "cjob", "cjob/team-a/orders"))
>>> JobDocument.from_storage(doc.for_storage()) == doc
True
>>> JobDocument.from_storage({**doc.for_storage(), "parallelism": "four"})
Traceback (most recent call last):
...
barrier_runtime.job_document.JobConfigError: `parallelism` in the job configuration is 'four', \
not an integer: fix the CheckpointedJob spec (or the file) and start the driver again
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from barrier_runtime.core import types

FORMAT_VERSION = 1
ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"
TOKEN_ENV = "CJOB_CONTROL_TOKEN"
DEFAULT_GRACE_PERIOD = 60.0
STATE_BACKENDS = ("memory", "disk")
TRIGGERS = ("driver", "operator")

_T = TypeVar("_T")
_MODE_NAMES = {name for m in types.CheckpointingMode for name in (m.value, m.resource_name)}
"""Either spelling of the runtime's checkpointing modes (``ExactlyOnce``, ``exactly-once``)."""
_REQUIRED: Any = object()
_KINDS: dict[object, str] = {int: "an integer", float: "a number", str: "a string"}
FIX = "fix the CheckpointedJob spec (or the file) and start the driver again"
Raw = Mapping[str, Any]


class JobConfigError(ValueError):
    """The job configuration is missing something or has a wrong value; the message says where."""


# -- reading helpers: every error names the field, its value and the fix ------------------


def section(doc: Raw, name: str, *, required: bool = False) -> dict[str, Any]:
    """``doc[name]`` as an object (``{}`` when optional and absent)."""
    value = doc.get(name)
    if value is None:
        if required:
            raise JobConfigError(f"the job configuration lacks `{name}`: {FIX}")
        return {}
    if not isinstance(value, dict):
        raise JobConfigError(
            f"`{name}` in the job configuration must be a JSON object, not "
            f"{type(value).__name__}: {FIX}"
        )
    return value


def value(raw: Raw, where: str, key: str, kind: Callable[[Any], _T], default: _T = _REQUIRED) -> _T:
    """``raw[key]`` converted by ``kind``; the error names ``where.key`` and its value."""
    name = f"{where}.{key}" if where else key
    if key not in raw or raw[key] is None:
        if default is _REQUIRED:
            raise JobConfigError(f"the job configuration lacks `{name}`: {FIX}")
        return default
    found = raw[key]
    try:
        if isinstance(found, bool | dict | list):
            raise TypeError(type(found).__name__)
        return kind(found)
    except (TypeError, ValueError) as exc:
        raise JobConfigError(
            f"`{name}` in the job configuration is {found!r}, not {_KINDS.get(kind, kind)}: {FIX}"
        ) from exc


def flag(raw: Raw, key: str, where: str = "") -> bool:
    """An optional boolean (``false`` when absent); ``"false"`` is not a boolean."""
    found = raw.get(key, False)
    if not isinstance(found, bool):
        name = f"{where}.{key}" if where else key
        raise JobConfigError(
            f"`{name}` in the job configuration is {found!r}, not true or false: {FIX}"
        )
    return found


# -- the sections -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobIdentity:
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PipelineSection:
    module: str | None = None
    file: str | None = None
    args: tuple[str, ...] = ()

    @classmethod
    def from_storage(cls, raw: Raw) -> PipelineSection:
        args = raw.get("args") or []
        if not isinstance(args, list):
            raise JobConfigError(f"`pipeline.args` in the job configuration must be a list: {FIX}")
        if raw.get("file"):
            return cls(file=str(raw["file"]), args=tuple(map(str, args)))
        if raw.get("module"):
            return cls(module=str(raw["module"]), args=tuple(map(str, args)))
        raise JobConfigError(
            f"`pipeline` in the job configuration needs a `module` or a `file`: {FIX}"
        )

    def for_storage(self) -> dict[str, Any]:
        named = {k: v for k, v in (("module", self.module), ("file", self.file)) if v}
        return named | {"args": list(self.args)}


@dataclass(frozen=True, slots=True)
class CheckpointingSection:
    interval: float = 30.0
    timeout: float = 600.0
    min_pause: float = 0.0
    max_concurrent: int = 1
    tolerable_failures: int = 3
    mode: str = "ExactlyOnce"
    unaligned: bool = False
    aligned_timeout: float = 0.0
    retained: int = 3
    incremental: bool = False
    local_recovery: bool = False
    state_backend: str = "memory"
    """``memory`` or ``disk`` (:class:`~barrier_runtime.core.types.StateBackendKind`)."""
    state_memory: int = 256 << 20
    """Bytes one slice's keyed state may use with the ``disk`` backend."""
    triggered_by: str = "driver"
    """``operator``: something else triggers every checkpoint (no periodic ones)."""

    @classmethod
    def from_storage(cls, raw: Raw) -> CheckpointingSection:
        mode = str(raw.get("mode", "ExactlyOnce"))
        if mode not in _MODE_NAMES:
            raise JobConfigError(
                f"`checkpointing.mode` {mode!r} is not ExactlyOnce or AtLeastOnce: {FIX}"
            )
        backend = str(raw.get("stateBackend", "memory"))
        if backend not in STATE_BACKENDS:
            raise JobConfigError(
                f"`checkpointing.stateBackend` {backend!r} is not memory or disk: {FIX}"
            )
        trigger = str(raw.get("triggeredBy") or "driver")
        if trigger not in TRIGGERS:
            raise JobConfigError(
                f"`checkpointing.triggeredBy` {trigger!r} is not driver or operator: {FIX}"
            )

        def number(key: str, kind: Callable[[Any], _T], default: _T) -> _T:
            return value(raw, "checkpointing", key, kind, default)

        return cls(
            interval=number("intervalSeconds", float, 30.0),
            timeout=number("timeoutSeconds", float, 600.0),
            min_pause=number("minPauseSeconds", float, 0.0),
            max_concurrent=number("maxConcurrent", int, 1),
            tolerable_failures=number("tolerableFailures", int, 3),
            mode=mode,
            unaligned=flag(raw, "unaligned", "checkpointing"),
            aligned_timeout=number("alignedTimeoutSeconds", float, 0.0),
            retained=number("retained", int, 3),
            incremental=flag(raw, "incremental", "checkpointing"),
            local_recovery=flag(raw, "localRecovery", "checkpointing"),
            state_backend=backend,
            state_memory=number("stateMemoryBytes", int, 256 << 20),
            triggered_by=trigger,
        )

    def for_storage(self) -> dict[str, Any]:
        return {
            "intervalSeconds": self.interval,
            "timeoutSeconds": self.timeout,
            "minPauseSeconds": self.min_pause,
            "maxConcurrent": self.max_concurrent,
            "tolerableFailures": self.tolerable_failures,
            "mode": self.mode,
            "unaligned": self.unaligned,
            "alignedTimeoutSeconds": self.aligned_timeout,
            "retained": self.retained,
            "incremental": self.incremental,
            "localRecovery": self.local_recovery,
            "stateBackend": self.state_backend,
            "stateMemoryBytes": self.state_memory,
            "triggeredBy": self.triggered_by,
        }


@dataclass(frozen=True, slots=True)
class StorageSection:
    endpoint: str
    bucket: str
    prefix: str = ""
    root: str = ""
    access_key_env: str = ACCESS_KEY_ENV
    secret_key_env: str = SECRET_KEY_ENV

    @classmethod
    def from_storage(cls, raw: Raw) -> StorageSection:
        return cls(
            endpoint=str(raw.get("endpoint") or ""),
            bucket=value(raw, "storage", "bucket", str),
            prefix=str(raw.get("prefix") or ""),
            root=str(raw.get("root") or "").strip("/"),
            access_key_env=str(raw.get("accessKeyEnv") or ACCESS_KEY_ENV),
            secret_key_env=str(raw.get("secretKeyEnv") or SECRET_KEY_ENV),
        )

    def for_storage(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "bucket": self.bucket,
            "prefix": self.prefix,
            "root": self.root,
            "accessKeyEnv": self.access_key_env,
            "secretKeyEnv": self.secret_key_env,
        }


@dataclass(frozen=True, slots=True)
class RestartSection:
    max_restarts: int = 10
    window: float = 3600.0
    initial: float = 10.0
    max: float = 300.0
    multiplier: float = 2.0
    jitter: float = 0.2
    reset_after: float = 600.0
    attempts_per_record: int = 3
    """Attempts on a record that fails the same way before the job fails for good."""
    prior_failures: tuple[float, ...] = ()
    """When earlier drivers of this job failed (epoch seconds): they count against
    ``max_restarts`` in the window, so driver and operator share one restart budget."""

    @classmethod
    def from_storage(cls, raw: Raw) -> RestartSection:
        b, where = section(raw, "backoff"), "restartPolicy"
        return cls(
            max_restarts=value(raw, where, "maxRestarts", int, 10),
            window=value(raw, where, "windowSeconds", float, 3600.0),
            initial=value(b, f"{where}.backoff", "initialSeconds", float, 10.0),
            max=value(b, f"{where}.backoff", "maxSeconds", float, 300.0),
            multiplier=value(b, f"{where}.backoff", "multiplier", float, 2.0),
            jitter=value(b, f"{where}.backoff", "jitter", float, 0.2),
            reset_after=value(raw, where, "resetAfterSeconds", float, 600.0),
            attempts_per_record=value(raw, where, "attemptsPerRecord", int, 3),
            prior_failures=_timestamps(raw, where, "priorFailureTimestamps"),
        )

    def for_storage(self) -> dict[str, Any]:
        return {
            "maxRestarts": self.max_restarts,
            "windowSeconds": self.window,
            "backoff": {
                "initialSeconds": self.initial,
                "maxSeconds": self.max,
                "multiplier": self.multiplier,
                "jitter": self.jitter,
            },
            "resetAfterSeconds": self.reset_after,
            "attemptsPerRecord": self.attempts_per_record,
            "priorFailureTimestamps": list(self.prior_failures),
        }


def _timestamps(raw: Raw, where: str, key: str) -> tuple[float, ...]:
    """A list of epoch seconds (absent: empty)."""
    found = raw.get(key)
    if found is None:
        return ()
    if not isinstance(found, list) or not all(
        isinstance(t, int | float) and not isinstance(t, bool) for t in found
    ):
        raise JobConfigError(
            f"`{where}.{key}` in the job configuration is {found!r}, not a list of "
            f"timestamps: {FIX}"
        )
    return tuple(float(t) for t in found)


@dataclass(frozen=True, slots=True)
class ControlSection:
    port: int
    token_env: str = TOKEN_ENV


@dataclass(frozen=True, slots=True)
class JobDocument:
    job: JobIdentity
    pipeline: PipelineSection
    parallelism: int
    storage: StorageSection
    max_parallelism: int | None = None
    checkpointing: CheckpointingSection = CheckpointingSection()
    restart_policy: RestartSection = RestartSection()
    allow_fresh_start: bool = False
    control: ControlSection | None = None
    grace_period: float = DEFAULT_GRACE_PERIOD
    """``driver.terminationGracePeriodSeconds``: the final savepoint's deadline on SIGTERM."""
    coordinator_port: int = 0
    """``coordinator.port``: fixed port workers connect back to (0: any free port)."""
    spark_conf: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_storage(cls, doc: Raw) -> JobDocument:
        version = doc.get("formatVersion", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise JobConfigError(f"unsupported job configuration formatVersion {version}")
        parallelism = value(doc, "", "parallelism", int)
        if parallelism < 1:
            raise JobConfigError(f"`parallelism` in the job configuration is {parallelism}: {FIX}")
        job = section(doc, "job")
        control = section(doc, "control")
        grace = value(
            section(doc, "driver"),
            "driver",
            "terminationGracePeriodSeconds",
            float,
            DEFAULT_GRACE_PERIOD,
        )
        if grace <= 0:
            raise JobConfigError(
                f"`driver.terminationGracePeriodSeconds` in the job configuration is {grace:g}: "
                f"{FIX}"
            )
        return cls(
            job=JobIdentity(
                str(job.get("namespace") or ""),
                str(job.get("name") or ""),
                str(job.get("uid") or ""),
            ),
            pipeline=PipelineSection.from_storage(section(doc, "pipeline", required=True)),
            parallelism=parallelism,
            storage=StorageSection.from_storage(section(doc, "storage", required=True)),
            max_parallelism=value(doc, "", "maxParallelism", int, None),
            checkpointing=CheckpointingSection.from_storage(section(doc, "checkpointing")),
            restart_policy=RestartSection.from_storage(section(doc, "restartPolicy")),
            allow_fresh_start=flag(doc, "allowFreshStart"),
            control=None
            if "port" not in control
            else ControlSection(
                value(control, "control", "port", int), str(control.get("tokenEnv") or TOKEN_ENV)
            ),
            grace_period=grace,
            coordinator_port=value(section(doc, "coordinator"), "coordinator", "port", int, 0),
            spark_conf={str(k): str(v) for k, v in section(doc, "sparkConf").items()},
        )

    def for_storage(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "formatVersion": FORMAT_VERSION,
            "job": {"namespace": self.job.namespace, "name": self.job.name, "uid": self.job.uid},
            "pipeline": self.pipeline.for_storage(),
            "parallelism": self.parallelism,
            "checkpointing": self.checkpointing.for_storage(),
            "storage": self.storage.for_storage(),
            "restartPolicy": self.restart_policy.for_storage(),
            "allowFreshStart": self.allow_fresh_start,
            "driver": {"terminationGracePeriodSeconds": self.grace_period},
            "sparkConf": dict(self.spark_conf),
        }
        if self.max_parallelism is not None:
            doc["maxParallelism"] = self.max_parallelism
        if self.control is not None:
            doc["control"] = {"port": self.control.port, "tokenEnv": self.control.token_env}
        if self.coordinator_port:
            doc["coordinator"] = {"port": self.coordinator_port}
        return doc
