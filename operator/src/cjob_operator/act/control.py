"""The driver's control API client, authenticated with a bearer token.

The API: docs/architecture.md, 'Control API', and docs/control-api.md.

The token is sent in the ``Authorization`` header and never logged. Responses are
parsed leniently: both ``snake_case`` and ``camelCase`` keys are accepted, so the
operator and the driver can evolve independently.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import aiohttp

from barrier_runtime.core import types
from cjob_operator.model.observation import (
    CheckpointInfo,
    ControlView,
    EntryStatus,
    FailedInfo,
    HistoryEntry,
)

URL_TEMPLATE_ENV = "CJOB_CONTROL_URL_TEMPLATE"
DEFAULT_URL_TEMPLATE = "http://{service}.{namespace}.svc:{port}"


class ControlApiError(Exception):
    """The driver's control API could not be reached or refused the request."""


def base_url(namespace: str, name: str, service: str, port: int) -> str:
    template = os.environ.get(URL_TEMPLATE_ENV) or DEFAULT_URL_TEMPLATE
    return template.format(namespace=namespace, name=name, service=service, port=port)


def pick(doc: Mapping[str, Any] | None, *keys: str) -> Any:
    if not doc:
        return None
    for key in keys:
        if doc.get(key) is not None:
            return doc[key]
    return None


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def parse_completed(doc: Mapping[str, Any] | None) -> CheckpointInfo | None:
    if not doc or pick(doc, "id", "checkpoint_id", "checkpointId") is None:
        return None
    kind = str(pick(doc, "kind") or "checkpoint")
    trigger = _float(pick(doc, "trigger_timestamp", "triggerTimestamp", "trigger_time"))
    done = _float(
        pick(
            doc,
            "completion_timestamp",
            "completionTimestamp",
            "ack_timestamp",
            "completion_time",
            "time",
        )
    )
    duration = _float(pick(doc, "duration", "duration_seconds", "durationSeconds"))
    if duration is None and trigger is not None and done is not None:
        duration = done - trigger
    size = pick(doc, "size", "size_bytes", "sizeBytes", "state_size")
    return CheckpointInfo(
        id=int(pick(doc, "id", "checkpoint_id", "checkpointId")),
        kind=_kind(kind),
        path=pick(doc, "path", "external_path", "externalPath"),
        time=done,
        duration_seconds=duration,
        size_bytes=None if size is None else int(size),
        trigger=pick(doc, "trigger", "triggered_by", "triggeredBy"),
    )


def parse_failed(doc: Mapping[str, Any] | None) -> FailedInfo | None:
    if not doc:
        return None
    cid = pick(doc, "id", "checkpoint_id", "checkpointId")
    return FailedInfo(
        id=None if cid is None else int(cid),
        reason=str(pick(doc, "failure_reason", "failureReason", "reason") or "unknown"),
        time=_float(
            pick(doc, "failure_timestamp", "failureTimestamp", "time", "trigger_timestamp")
        ),
    )


_STATUSES = {
    "completed": EntryStatus.COMPLETED,
    "complete": EntryStatus.COMPLETED,
    "failed": EntryStatus.FAILED,
    "in-progress": EntryStatus.IN_PROGRESS,
    "in_progress": EntryStatus.IN_PROGRESS,
    "pending": EntryStatus.IN_PROGRESS,
}


def _kind(name: str) -> types.CheckpointKind:
    """The runtime's kind for the control API's spelling (anything else is a checkpoint)."""
    return (
        types.CheckpointKind.SAVEPOINT if name == "savepoint" else types.CheckpointKind.CHECKPOINT
    )


def parse_entry(doc: Mapping[str, Any]) -> HistoryEntry | None:
    """One ``history[]`` entry; ``None`` when it has no id or an unknown status."""
    cid = pick(doc, "id", "checkpoint_id", "checkpointId")
    status = _STATUSES.get(str(pick(doc, "status") or "").lower())
    if cid is None or status is None:
        return None
    kind = str(pick(doc, "kind") or "checkpoint")
    return HistoryEntry(
        id=int(cid),
        status=status,
        kind=_kind(kind),
        path=pick(doc, "path", "external_path", "externalPath"),
        trigger_time=_float(pick(doc, "trigger_timestamp", "triggerTimestamp", "trigger_time")),
        completion_time=_float(pick(doc, "completion_timestamp", "completionTimestamp")),
        failure_reason=pick(doc, "failure_reason", "failureReason", "reason"),
    )


def parse_checkpoints(
    doc: Mapping[str, Any], job: Mapping[str, Any] | None, ready: bool
) -> ControlView:
    """Turn ``GET /v1/checkpoints`` (+ ``/v1/job``) into a :class:`ControlView`."""
    latest = pick(doc, "latest") or {}
    counts = pick(doc, "counts") or {}
    history = list(pick(doc, "history") or [])
    in_progress = pick(latest, "in_progress", "inProgress")
    if isinstance(in_progress, list):
        n_in_progress = len(in_progress)
    else:
        n_in_progress = int(pick(counts, "in_progress", "inProgress") or (1 if in_progress else 0))
    triggers = [
        _float(pick(h, "trigger_timestamp", "triggerTimestamp", "trigger_time")) for h in history
    ]
    for entry in [in_progress] if isinstance(in_progress, Mapping) else (in_progress or []):
        triggers.append(_float(pick(entry, "trigger_timestamp", "triggerTimestamp")))
    consecutive = pick(doc, "consecutive_failures", "consecutiveFailures")
    if consecutive is None:
        consecutive = 0
        for entry in sorted(history, key=lambda h: int(pick(h, "id") or 0), reverse=True):
            status = str(pick(entry, "status") or "").lower()
            if status in ("completed", "complete"):
                break
            if status == "failed":
                consecutive += 1
    return ControlView(
        reachable=True,
        ready=ready,
        job_state=None if not job else pick(job, "state", "status"),
        in_progress=n_in_progress,
        last_trigger_time=max((t for t in triggers if t is not None), default=None),
        latest_completed=parse_completed(pick(latest, "completed")),
        latest_failed=parse_failed(pick(latest, "failed")),
        consecutive_failures=int(consecutive),
        failure_times=tuple(
            t
            for t in (_float(v) for v in pick(job or {}, "failureTimestamps") or ())
            if t is not None
        ),
        last_failure=None if not job else pick(job, "failure"),
        history=tuple(
            e for e in (parse_entry(h) for h in history if isinstance(h, Mapping)) if e is not None
        ),
    )


class ControlClient:
    """One job's control API."""

    def __init__(self, url: str, token: str | None, timeout: float = 5.0) -> None:
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def _call(
        self, method: str, path: str, body: Any = None, timeout: float | None = None
    ) -> tuple[int, Any]:
        to = aiohttp.ClientTimeout(total=timeout) if timeout else self._timeout
        try:
            async with (
                aiohttp.ClientSession(timeout=to) as session,
                session.request(method, self._url + path, json=body, headers=self._headers) as resp,
            ):
                try:
                    payload = await resp.json(content_type=None)
                except ValueError:
                    payload = None
                return resp.status, payload
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise ControlApiError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    async def observe(self) -> ControlView:
        try:
            ready_status, _ = await self._call("GET", "/readyz")
            job_status, job = await self._call("GET", "/v1/job")
            cp_status, checkpoints = await self._call("GET", "/v1/checkpoints")
        except ControlApiError as exc:
            return ControlView.unreachable(str(exc))
        if cp_status != 200 or not isinstance(checkpoints, Mapping):
            return ControlView(
                reachable=True, ready=False, error=f"GET /v1/checkpoints answered {cp_status}"
            )
        return parse_checkpoints(
            checkpoints, job if job_status == 200 else None, ready=ready_status == 200
        )

    async def trigger(self, kind: types.CheckpointKind) -> int | None:
        status, body = await self._call("POST", "/v1/checkpoints", {"kind": kind.value})
        if status not in (200, 201, 202):
            raise ControlApiError(f"POST /v1/checkpoints answered {status}: {body}")
        cid = pick(body if isinstance(body, Mapping) else None, "id", "checkpoint_id")
        return None if cid is None else int(cid)

    async def stop_with_savepoint(self, timeout: float) -> tuple[str | None, int | None]:
        status, body = await self._call("POST", "/v1/stop", {"savepoint": True}, timeout)
        if status not in (200, 201, 202) or not isinstance(body, Mapping):
            raise ControlApiError(f"POST /v1/stop answered {status}: {body}")
        sid = pick(body, "id", "checkpoint_id", "savepoint_id")
        return pick(body, "path", "savepoint_path"), None if sid is None else int(sid)
