"""``CheckpointedJob.spec`` as frozen values, with the CRD's defaults applied again.

The CRD schema defaults most fields; :meth:`JobSpec.from_storage` applies the same
defaults so the operator behaves identically on a cluster that lost them (and in
tests that skip the schema). Durations are parsed to seconds here; a malformed one
raises :class:`SpecError` with the field path in the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from barrier_runtime import job_document
from barrier_runtime.core import types
from cjob_operator.model import durations, enums

Raw = Mapping[str, Any]
NonceValue = int | str
"""A nonce as written (the CRD makes them integers); only its changes matter."""


class SpecError(ValueError):
    """The spec cannot be parsed; the message names the field."""


def _dur(raw: Raw, key: str, default: str, path: str) -> float:
    value = raw.get(key, default)
    try:
        return durations.parse_duration(value)
    except durations.DurationError as exc:
        raise SpecError(f"spec.{path}.{key}: {exc}") from exc


def _enum(enum_cls: Any, raw: Raw, key: str, default: str, path: str) -> Any:
    value = raw.get(key, default)
    try:
        return enum_cls(value)
    except ValueError as exc:
        allowed = ", ".join(getattr(m, "resource_name", m.value) for m in enum_cls)
        raise SpecError(f"spec.{path}{key}: {value!r} is not one of {allowed}") from exc


@dataclass(frozen=True, slots=True)
class PipelineSpec:
    module: str | None = None
    file: str | None = None
    args: tuple[str, ...] = ()

    @classmethod
    def from_storage(cls, raw: Raw) -> PipelineSpec:
        return cls(
            module=raw.get("module"),
            file=raw.get("file"),
            args=tuple(str(a) for a in raw.get("args", ())),
        )


DEFAULT_TERMINATION_GRACE_PERIOD = int(job_document.DEFAULT_GRACE_PERIOD)


@dataclass(frozen=True, slots=True)
class PodSpec:
    """``spec.driver`` / ``spec.executor``."""

    cores: int = 1
    memory: str = "1Gi"
    instances: int | None = None
    service_account: str | None = None
    pod_template: Mapping[str, Any] = field(default_factory=dict)
    termination_grace_period: int = DEFAULT_TERMINATION_GRACE_PERIOD
    """Seconds from SIGTERM to SIGKILL (driver only): time for the final savepoint."""

    @classmethod
    def from_storage(cls, raw: Raw) -> PodSpec:
        return cls(
            cores=int(raw.get("cores", 1)),
            memory=str(raw.get("memory", "1Gi")),
            instances=None if raw.get("instances") is None else int(raw["instances"]),
            service_account=raw.get("serviceAccount"),
            pod_template=dict(raw.get("podTemplate") or {}),
            termination_grace_period=int(
                raw.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
            ),
        )


def _mebibytes(quantity: str) -> int:
    """``256Mi`` or ``1Gi`` (what the CRD admits) in MiB."""
    if quantity.endswith("Gi"):
        return int(quantity[:-2]) << 10
    if quantity.endswith("Mi"):
        return int(quantity[:-2])
    raise SpecError(f"spec.checkpointing.stateBackend.memory {quantity!r} is not Mi or Gi")


@dataclass(frozen=True, slots=True)
class CheckpointingSpec:
    interval: float = 30.0
    timeout: float = 600.0
    min_pause: float = 0.0
    max_concurrent: int = 1
    tolerable_failures: int = 3
    mode: types.CheckpointingMode = types.CheckpointingMode.EXACTLY_ONCE
    unaligned: bool = False
    aligned_timeout: float = 0.0
    retained: int = 3
    incremental: bool = False
    local_recovery: bool = False
    state_backend: types.StateBackendKind = types.StateBackendKind.MEMORY
    state_memory: int = types.DEFAULT_STATE_MEMORY
    """Bytes, from ``stateBackend.memory`` (``256Mi``)."""

    @classmethod
    def from_storage(cls, raw: Raw) -> CheckpointingSpec:
        p = "checkpointing"
        unaligned = raw.get("unaligned") or {}
        backend = raw.get("stateBackend") or {}
        return cls(
            interval=_dur(raw, "interval", "30s", p),
            timeout=_dur(raw, "timeout", "10m", p),
            min_pause=_dur(raw, "minPause", "0s", p),
            max_concurrent=int(raw.get("maxConcurrent", 1)),
            tolerable_failures=int(raw.get("tolerableFailures", 3)),
            mode=_enum(types.CheckpointingMode, raw, "mode", "ExactlyOnce", "checkpointing."),
            unaligned=bool(unaligned.get("enabled", False)),
            aligned_timeout=_dur(unaligned, "alignedTimeout", "0s", p + ".unaligned"),
            retained=int(raw.get("retained", 3)),
            incremental=bool(raw.get("incremental", False)),
            local_recovery=bool(raw.get("localRecovery", False)),
            state_backend=types.StateBackendKind(str(backend.get("type", "Memory")).lower()),
            state_memory=_mebibytes(str(backend.get("memory", "256Mi"))) << 20,
        )


@dataclass(frozen=True, slots=True)
class SavepointsSpec:
    """``spec.savepoints``: periodic savepoints, taken by the operator."""

    interval: float | None = None
    """Seconds between periodic savepoints; ``None``: none are taken."""
    retained: int = 5
    """Periodic savepoints kept in storage (never manual or final ones)."""

    @classmethod
    def from_storage(cls, raw: Raw) -> SavepointsSpec:
        interval = (
            None if raw.get("interval") in (None, "") else _dur(raw, "interval", "0s", "savepoints")
        )
        return cls(interval=interval, retained=int(raw.get("retained", 5)))


@dataclass(frozen=True, slots=True)
class RollbackSpec:
    """``spec.rollback``: redeploy the last stable spec when a new one never proves itself."""

    enabled: bool = False
    timeout: float = 300.0
    """Seconds a new spec has to run with a completed checkpoint."""

    @classmethod
    def from_storage(cls, raw: Raw) -> RollbackSpec:
        return cls(
            enabled=bool(raw.get("enabled", False)), timeout=_dur(raw, "timeout", "5m", "rollback")
        )


@dataclass(frozen=True, slots=True)
class SecretKeys:
    """A reference to storage credentials: never the values themselves."""

    name: str
    access_key_key: str = "AWS_ACCESS_KEY_ID"
    secret_key_key: str = "AWS_SECRET_ACCESS_KEY"


@dataclass(frozen=True, slots=True)
class StorageSpec:
    endpoint: str = ""
    bucket: str = ""
    prefix: str = ""
    credentials: SecretKeys | None = None

    @classmethod
    def from_storage(cls, raw: Raw) -> StorageSpec:
        creds = raw.get("credentialsSecret")
        return cls(
            endpoint=str(raw.get("endpoint", "")),
            bucket=str(raw.get("bucket", "")),
            prefix=str(raw.get("prefix", "cjob")).strip("/"),
            credentials=None
            if not creds
            else SecretKeys(
                name=str(creds["name"]),
                access_key_key=str(creds.get("accessKeyKey", "AWS_ACCESS_KEY_ID")),
                secret_key_key=str(creds.get("secretKeyKey", "AWS_SECRET_ACCESS_KEY")),
            ),
        )

    def job_root(self, namespace: str, name: str) -> str:
        """``{prefix}/{namespace}/{job}`` inside the bucket (no leading slash)."""
        parts = [self.prefix, namespace, name] if self.prefix else [namespace, name]
        return "/".join(parts)


@dataclass(frozen=True, slots=True)
class BackoffSpec:
    initial: float = 10.0
    max: float = 300.0
    multiplier: float = 2.0
    jitter: float = 0.2


@dataclass(frozen=True, slots=True)
class RestartPolicySpec:
    type: enums.RestartType = enums.RestartType.ON_FAILURE
    max_restarts: int = 10
    window: float = 3600.0
    backoff: BackoffSpec = BackoffSpec()
    reset_after: float = 600.0
    attempts_per_record: int = 3

    @classmethod
    def from_storage(cls, raw: Raw) -> RestartPolicySpec:
        p = "restartPolicy"
        b = raw.get("backoff") or {}
        return cls(
            type=_enum(enums.RestartType, raw, "type", "OnFailure", "restartPolicy."),
            max_restarts=int(raw.get("maxRestarts", 10)),
            window=_dur(raw, "window", "1h", p),
            backoff=BackoffSpec(
                initial=_dur(b, "initial", "10s", p + ".backoff"),
                max=_dur(b, "max", "5m", p + ".backoff"),
                multiplier=float(b.get("multiplier", 2.0)),
                jitter=float(b.get("jitter", 0.2)),
            ),
            reset_after=_dur(raw, "resetAfter", "10m", p),
            attempts_per_record=int(raw.get("attemptsPerRecord", 3)),
        )


@dataclass(frozen=True, slots=True)
class RestoreFromSpec:
    checkpoint_id: int | None = None
    path: str | None = None

    @classmethod
    def from_storage(cls, raw: Raw | None) -> RestoreFromSpec | None:
        if not raw:
            return None
        cid = raw.get("checkpointId")
        return cls(checkpoint_id=None if cid is None else int(cid), path=raw.get("path"))


@dataclass(frozen=True, slots=True)
class Nonces:
    """The spec's nonces (:class:`~cjob_operator.model.enums.NonceField`); unset is ``None``.

    >>> n = Nonces.from_storage({"restartNonce": 3, "restoreNonce": ""})
    >>> n.get(enums.NonceField.RESTART), n.get(enums.NonceField.RESTORE)
    (3, None)
    >>> n.changed_since(enums.NonceField.RESTART, {"restartNonce": "3"})
    False
    """

    checkpoint_trigger: NonceValue | None = None
    savepoint_trigger: NonceValue | None = None
    restart: NonceValue | None = None
    restore: NonceValue | None = None

    def get(self, field: enums.NonceField) -> NonceValue | None:
        value: NonceValue | None = getattr(self, field.name.lower())
        return value

    def changed_since(self, field: enums.NonceField, reconciled: Raw) -> bool:
        """Whether ``field`` holds a value the ``reconciled`` spec has not handled yet."""
        value, old = self.get(field), reconciled.get(field.value)
        return value is not None and (old is None or str(old) != str(value))

    @classmethod
    def from_storage(cls, raw: Raw) -> Nonces:
        return cls(**{f.name.lower(): _opt_nonce(raw.get(f.value)) for f in enums.NonceField})


@dataclass(frozen=True, slots=True)
class JobSpec:
    """The whole ``spec``; ``raw`` keeps the stored form for diffs and ``lastReconciledSpec``."""

    image: str
    image_pull_policy: str
    pipeline: PipelineSpec
    parallelism: int
    max_parallelism: int
    driver: PodSpec
    executor: PodSpec
    spark_conf: Mapping[str, str]
    env: tuple[Mapping[str, Any], ...]
    """``spec.env``: EnvVar objects for the driver and every executor, as stored."""
    checkpointing: CheckpointingSpec
    storage: StorageSpec
    restart_policy: RestartPolicySpec
    state: enums.DesiredState
    upgrade_mode: enums.UpgradeMode
    restore_from: RestoreFromSpec | None
    nonces: Nonces
    allow_fresh_start: bool
    savepoints: SavepointsSpec = SavepointsSpec()
    rollback: RollbackSpec = RollbackSpec()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def executor_instances(self) -> int:
        return self.executor.instances if self.executor.instances else self.parallelism

    @classmethod
    def from_storage(cls, raw: Raw) -> JobSpec:
        try:
            return cls(
                image=str(raw.get("image", "")),
                image_pull_policy=str(raw.get("imagePullPolicy", "IfNotPresent")),
                pipeline=PipelineSpec.from_storage(raw.get("pipeline") or {}),
                parallelism=int(raw.get("parallelism", 2)),
                max_parallelism=int(raw.get("maxParallelism", 128)),
                driver=PodSpec.from_storage(raw.get("driver") or {}),
                executor=PodSpec.from_storage(raw.get("executor") or {}),
                spark_conf={str(k): str(v) for k, v in (raw.get("sparkConf") or {}).items()},
                env=tuple(_thaw(e) for e in raw.get("env") or ()),
                checkpointing=CheckpointingSpec.from_storage(raw.get("checkpointing") or {}),
                storage=StorageSpec.from_storage(raw.get("storage") or {}),
                restart_policy=RestartPolicySpec.from_storage(raw.get("restartPolicy") or {}),
                state=_enum(enums.DesiredState, raw, "state", "Running", ""),
                upgrade_mode=_enum(enums.UpgradeMode, raw, "upgradeMode", "LastCheckpoint", ""),
                restore_from=RestoreFromSpec.from_storage(raw.get("restoreFrom")),
                nonces=Nonces.from_storage(raw),
                allow_fresh_start=bool(raw.get("allowFreshStart", False)),
                savepoints=SavepointsSpec.from_storage(raw.get("savepoints") or {}),
                rollback=RollbackSpec.from_storage(raw.get("rollback") or {}),
                raw=_thaw(raw),
            )
        except SpecError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise SpecError(f"spec cannot be read: {exc}") from exc

    def for_storage(self) -> dict[str, Any]:
        thawed: dict[str, Any] = _thaw(self.raw)
        return thawed


def _opt_nonce(value: Any) -> NonceValue | None:
    return None if value is None or value == "" else value


def _thaw(value: Any) -> Any:
    """A plain JSON copy of a (possibly kopf-frozen) mapping/sequence."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value
