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
barrier_runtime.control_fields.ControlDocumentError: POST /v1/checkpoints answered control \
API version 2, newer than this reader's 1: upgrade the operator or the cjob CLI
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, cast

from barrier_runtime.control_fields import (
    Check,
    ControlDocumentError,
    boolean,
    integer,
    json_object,
    json_type,
    list_of,
    number,
    one_of,
    optional_field,
    string,
)

__all__ = ["ControlDocumentError"]  # defined beside the field checks, raised by both
API_VERSION = 1
STATUSES = ("in-progress", "completed", "failed")
"""The statuses of a checkpoint or savepoint (``checkpoint.stats.CheckpointStatus``)."""
KINDS = ("checkpoint", "savepoint")
TOKEN_HEADER = "Authorization"
"""The request header with ``Bearer <token>``."""
DEFAULT_PORT = 8080
"""The control API's port in a driver pod (the operator's Service and probes use it)."""


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
    """The latest attempt that got running: its start to every subtask restored and running."""
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


_ENTRY: dict[str, Check] = {
    "id": integer,
    "status": one_of(*STATUSES),
    "kind": one_of(*KINDS),
    "trigger_timestamp": number,
    "latest_ack_timestamp": optional_field(number),
    "completion_timestamp": optional_field(number),
    "failure_timestamp": optional_field(number),
    "duration": optional_field(number),
    "size": integer,
    "alignment_duration": number,
    "path": optional_field(string),
    "failure_reason": optional_field(string),
    "failure_message": optional_field(string),
    "acknowledged": integer,
    "tasks": integer,
}
_ENTRY_OPTIONAL: dict[str, Check] = {"uploaded_size": integer}
_ENTRY_IN_LIST = json_object(_ENTRY, optional=_ENTRY_OPTIONAL)
_JOB: dict[str, Check] = {
    "name": string,
    "state": string,
    "attempt": integer,
    "restarts": integer,
    "parallelism": integer,
    "max_parallelism": integer,
    "start_time": string,
    "start_timestamp": number,
    "ready": boolean,
    "restored_from": optional_field(integer),
    "failure": optional_field(string),
    "failure_detail": optional_field(string),
    "failure_timestamps": list_of(number),
    "startup_seconds": optional_field(number),
    "storage": optional_field(string),
}
_CHECKPOINTS: dict[str, Check] = {
    "counts": json_object({k: integer for k in CountsDoc.__annotations__}),
    "latest": json_object({k: optional_field(_ENTRY_IN_LIST) for k in LatestDoc.__annotations__}),
    "history": list_of(_ENTRY_IN_LIST),
    "consecutive_failures": integer,
    "next_id": optional_field(integer),
    "last_rejection": optional_field(
        json_object({"kind": string, "reason": string, "message": string, "timestamp": number})
    ),
}
_TRIGGERED: dict[str, Check] = {
    "id": integer,
    "kind": one_of(*KINDS),
    "status": one_of(*STATUSES),
    "message": string,
}
_STOPPED: dict[str, Check] = {
    "id": integer,
    "kind": one_of(*KINDS),
    "status": one_of(*STATUSES),
    "path": string,
}


def _versioned(
    doc: object,
    where: str,
    fields: Mapping[str, Check],
    optional: Mapping[str, Check] | None = None,
) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise ControlDocumentError(f"{where} answered {json_type(doc)}, not a JSON object")
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
        return cast(
            dict[str, Any], json_object(fields, versioned=True, optional=optional)(doc, "body")
        )
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
