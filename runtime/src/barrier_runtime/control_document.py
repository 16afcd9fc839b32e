"""The control API's ``/v1/*`` documents, typed on both sides (the driver writes, clients read).

The driver's control server (:mod:`barrier_runtime.control`) builds these
TypedDicts and sends them with :func:`to_json`; the operator
(``cjob_operator.act.control``), the ``cjob`` CLI and the tests read every answer
with the ``parse_*`` function of its endpoint, which checks each field and names
the one that is wrong (:class:`ControlDocumentError`). Pure: no I/O, no HTTP, so
the operator's image imports it too.

Bodies, by endpoint:

* ``GET /v1/job`` → :class:`JobDoc`;
* ``GET /v1/checkpoints`` → :class:`CheckpointsDoc`;
* ``GET /v1/checkpoints/{id}`` → :class:`CheckpointEntryDoc`;
* ``POST /v1/checkpoints`` (``202``) → :class:`TriggeredDoc`;
* ``POST /v1/stop`` (``200``) → :class:`StoppedDoc`;
* any refusal (``4xx``/``5xx``) → :class:`ErrorDoc`.

**Casing.** Every key of every body is ``snake_case``: the request bodies, the
checkpoint history and the Prometheus metric names already were, the API is
served and read by Python, and one casing means no reader ever guesses a
spelling. (Kubernetes-style camelCase stays in the CRD and ``job.json``.)

**Version.** Every body carries ``"api_version": API_VERSION``. Adding a key does
not change the version: readers ignore keys they do not know. Removing or
renaming a key, or changing its meaning, raises the version; a reader that gets
a version newer than its own refuses the body (the message says to upgrade the
reader), and one without a version is not a ``cjob`` control API answer.
Times are epoch seconds (floats), durations seconds, sizes bytes.

>>> doc = parse_triggered({"api_version": 1, "id": 3, "kind": "savepoint",
...                        "status": "in-progress", "message": ""})
>>> doc["id"], doc["kind"]
(3, 'savepoint')
>>> parse_triggered({"api_version": 2, "id": 3})
Traceback (most recent call last):
...
barrier_runtime.control_document.ControlDocumentError: POST /v1/checkpoints answered control \
API version 2, newer than this reader's 1: upgrade the operator or the cjob CLI
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, TypedDict, cast

API_VERSION = 1
STATUSES = ("in-progress", "completed", "failed")
"""The statuses of a checkpoint or savepoint (``checkpoint.stats.CheckpointStatus``)."""
KINDS = ("checkpoint", "savepoint")
TOKEN_HEADER = "Authorization"
"""The request header with ``Bearer <token>``."""
DEFAULT_PORT = 8080
"""The control API's port in a driver pod (the operator's Service and probes use it)."""


class ControlDocumentError(ValueError):
    """A control API body is not what this version of the contract says; the message names why."""


class JobDoc(TypedDict):
    """``GET /v1/job``."""

    api_version: int
    name: str
    state: str
    """``CREATED``, ``RUNNING``, ``RESTARTING``, ``STOPPING``, ``STOPPED``, ``FINISHED``…"""
    attempt: int
    restarts: int
    parallelism: int
    max_parallelism: int
    start_time: str
    """ISO 8601, UTC."""
    start_timestamp: float
    """The same instant in epoch seconds."""
    ready: bool
    restored_from: int | None
    failure: str | None
    failure_detail: str | None
    """The last failure's traceback."""
    failure_timestamps: list[float]
    """When each failed attempt of this driver failed."""
    startup_seconds: float | None
    """The latest attempt that got running: its start to every subtask running."""
    storage: str | None


class CheckpointEntryDoc(TypedDict):
    """``GET /v1/checkpoints/{id}``, and each entry of ``GET /v1/checkpoints``."""

    api_version: NotRequired[int]
    """Only on ``GET /v1/checkpoints/{id}`` (the entries of a list share their list's)."""
    id: int
    status: str
    """One of :data:`STATUSES`."""
    kind: str
    """One of :data:`KINDS`."""
    trigger_timestamp: float
    latest_ack_timestamp: float | None
    completion_timestamp: float | None
    """Set when completed (committed)."""
    failure_timestamp: float | None
    """Set when failed."""
    duration: float | None
    """Trigger to completion or failure; null while in progress."""
    size: int
    uploaded_size: NotRequired[int]
    """Bytes written for it: ``size`` unless incremental checkpoints reused earlier objects
    (absent from drivers older than incremental checkpoints)."""
    alignment_duration: float
    path: str | None
    failure_reason: str | None
    failure_message: str | None
    acknowledged: int
    tasks: int


class CountsDoc(TypedDict):
    triggered: int
    in_progress: int
    completed: int
    failed: int
    rejected: int


class LatestDoc(TypedDict):
    completed: CheckpointEntryDoc | None
    failed: CheckpointEntryDoc | None
    savepoint: CheckpointEntryDoc | None
    in_progress: CheckpointEntryDoc | None


class RejectionDoc(TypedDict):
    kind: str
    reason: str
    message: str
    timestamp: float


class CheckpointsDoc(TypedDict):
    """``GET /v1/checkpoints``."""

    api_version: int
    counts: CountsDoc
    latest: LatestDoc
    history: list[CheckpointEntryDoc]
    consecutive_failures: int
    next_id: int | None
    last_rejection: RejectionDoc | None


class TriggeredDoc(TypedDict):
    """``POST /v1/checkpoints`` accepted (``202``, ``Location: /v1/checkpoints/{id}``)."""

    api_version: int
    id: int
    kind: str
    status: str
    message: str


class StoppedDoc(TypedDict):
    """``POST /v1/stop``: the final savepoint completed and the job stops."""

    api_version: int
    id: int
    kind: str
    status: str
    path: str


class ErrorDoc(TypedDict, total=False):
    """Any refusal; ``error`` is always there."""

    api_version: int
    error: str
    reason: str
    """A machine-readable slug (``unauthorized``, ``job-not-running``, ``too-many-pending``…)."""
    id: int
    """The checkpoint the refusal is about, when there is one."""
    state: str
    """The job's state, when the refusal is about it."""


def to_json(doc: Mapping[str, Any]) -> bytes:
    """A body as the server sends it (one line of UTF-8 JSON)."""
    return json.dumps(doc).encode("utf-8") + b"\n"


def from_json(raw: bytes, where: str) -> object:
    """The JSON value of an answer's bytes; ``where`` names the endpoint in the error."""
    try:
        return cast(object, json.loads(raw))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ControlDocumentError(f"{where} answered a body that is not JSON: {exc}") from None


# -- field checks: each returns the value or raises naming `where.key` ----------------------

_Check = Callable[[object, str], object]


def _int(value: object, name: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlDocumentError(f"`{name}` must be an integer, got {json.dumps(value)}")
    return value


def _num(value: object, name: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlDocumentError(f"`{name}` must be a number, got {json.dumps(value)}")
    return float(value)


def _str(value: object, name: str) -> object:
    if not isinstance(value, str):
        raise ControlDocumentError(f"`{name}` must be a string, got {json.dumps(value)}")
    return value


def _bool(value: object, name: str) -> object:
    if not isinstance(value, bool):
        raise ControlDocumentError(f"`{name}` must be true or false, got {json.dumps(value)}")
    return value


def _one_of(*names: str) -> _Check:
    def check(value: object, name: str) -> object:
        if value not in names:
            allowed = ", ".join(json.dumps(n) for n in names)
            raise ControlDocumentError(
                f"`{name}` must be one of {allowed}, got {json.dumps(value)}"
            )
        return value

    return check


def _optional(check: _Check) -> _Check:
    def optional(value: object, name: str) -> object:
        return None if value is None else check(value, name)

    return optional


def _list(check: _Check) -> _Check:
    def each(value: object, name: str) -> object:
        if not isinstance(value, list):
            raise ControlDocumentError(f"`{name}` must be an array, got {json.dumps(value)}")
        return [check(item, f"{name}[{i}]") for i, item in enumerate(value)]

    return each


def _object(
    fields: Mapping[str, _Check],
    versioned: bool = False,
    optional: Mapping[str, _Check] | None = None,
) -> _Check:
    """``fields`` must all be there; ``optional`` ones are checked when they are."""

    def read(value: object, name: str) -> object:
        if not isinstance(value, dict):
            raise ControlDocumentError(f"`{name}` must be a JSON object, got {_json_type(value)}")
        out: dict[str, object] = {"api_version": value["api_version"]} if versioned else {}
        for key, check in fields.items():
            if key not in value:
                raise ControlDocumentError(f"`{name}.{key}` is missing")
            out[key] = check(value[key], f"{name}.{key}")
        for key, check in (optional or {}).items():
            if key in value:
                out[key] = check(value[key], f"{name}.{key}")
        return out

    return read


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    return "null" if value is None else json.dumps(value)


_ENTRY: dict[str, _Check] = {
    "id": _int,
    "status": _one_of(*STATUSES),
    "kind": _one_of(*KINDS),
    "trigger_timestamp": _num,
    "latest_ack_timestamp": _optional(_num),
    "completion_timestamp": _optional(_num),
    "failure_timestamp": _optional(_num),
    "duration": _optional(_num),
    "size": _int,
    "alignment_duration": _num,
    "path": _optional(_str),
    "failure_reason": _optional(_str),
    "failure_message": _optional(_str),
    "acknowledged": _int,
    "tasks": _int,
}
_ENTRY_OPTIONAL: dict[str, _Check] = {"uploaded_size": _int}
_ENTRY_IN_LIST = _object(_ENTRY, optional=_ENTRY_OPTIONAL)
_JOB: dict[str, _Check] = {
    "name": _str,
    "state": _str,
    "attempt": _int,
    "restarts": _int,
    "parallelism": _int,
    "max_parallelism": _int,
    "start_time": _str,
    "start_timestamp": _num,
    "ready": _bool,
    "restored_from": _optional(_int),
    "failure": _optional(_str),
    "failure_detail": _optional(_str),
    "failure_timestamps": _list(_num),
    "startup_seconds": _optional(_num),
    "storage": _optional(_str),
}
_CHECKPOINTS: dict[str, _Check] = {
    "counts": _object({k: _int for k in CountsDoc.__annotations__}),
    "latest": _object({k: _optional(_ENTRY_IN_LIST) for k in LatestDoc.__annotations__}),
    "history": _list(_ENTRY_IN_LIST),
    "consecutive_failures": _int,
    "next_id": _optional(_int),
    "last_rejection": _optional(
        _object({"kind": _str, "reason": _str, "message": _str, "timestamp": _num})
    ),
}
_TRIGGERED: dict[str, _Check] = {
    "id": _int,
    "kind": _one_of(*KINDS),
    "status": _one_of(*STATUSES),
    "message": _str,
}
_STOPPED: dict[str, _Check] = {
    "id": _int,
    "kind": _one_of(*KINDS),
    "status": _one_of(*STATUSES),
    "path": _str,
}


def _versioned(
    doc: object,
    where: str,
    fields: Mapping[str, _Check],
    optional: Mapping[str, _Check] | None = None,
) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise ControlDocumentError(f"{where} answered {_json_type(doc)}, not a JSON object")
    version = doc.get("api_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ControlDocumentError(
            f"{where} answered without an integer `api_version`: not a cjob control API answer"
        )
    if version > API_VERSION:
        raise ControlDocumentError(
            f"{where} answered control API version {version}, newer than this reader's "
            f"{API_VERSION}: upgrade the operator or the cjob CLI"
        )
    try:
        return cast(dict[str, Any], _object(fields, versioned=True, optional=optional)(doc, "body"))
    except ControlDocumentError as exc:
        raise ControlDocumentError(
            f"{where} answered a body this reader cannot use: {exc}"
        ) from None


def parse_job(doc: object) -> JobDoc:
    """``GET /v1/job``."""
    return cast(JobDoc, _versioned(doc, "GET /v1/job", _JOB))


def parse_checkpoints(doc: object) -> CheckpointsDoc:
    """``GET /v1/checkpoints``."""
    return cast(CheckpointsDoc, _versioned(doc, "GET /v1/checkpoints", _CHECKPOINTS))


def parse_entry(doc: object) -> CheckpointEntryDoc:
    """``GET /v1/checkpoints/{id}``."""
    parsed = _versioned(doc, "GET /v1/checkpoints/{id}", _ENTRY, _ENTRY_OPTIONAL)
    return cast(CheckpointEntryDoc, parsed)


def parse_triggered(doc: object) -> TriggeredDoc:
    """``POST /v1/checkpoints`` (``202``)."""
    return cast(TriggeredDoc, _versioned(doc, "POST /v1/checkpoints", _TRIGGERED))


def parse_stopped(doc: object) -> StoppedDoc:
    """``POST /v1/stop`` (``200``)."""
    return cast(StoppedDoc, _versioned(doc, "POST /v1/stop", _STOPPED))


def parse_error(doc: object) -> ErrorDoc | None:
    """A refusal's body; ``None`` when it is not one (no ``error`` string: not a cjob answer)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("error"), str):
        return None
    out: dict[str, object] = {"error": doc["error"]}
    for key, kind in (("api_version", int), ("reason", str), ("id", int), ("state", str)):
        found = doc.get(key)
        if isinstance(found, kind) and not isinstance(found, bool):
            out[key] = found
    return cast(ErrorDoc, out)


def error_doc(message: str, reason: str | None = None, **extra: int | str) -> ErrorDoc:
    """A refusal as the server sends it."""
    doc: dict[str, object] = {"api_version": API_VERSION, "error": message}
    if reason is not None:
        doc["reason"] = reason
    doc.update(extra)
    return cast(ErrorDoc, doc)
