"""The driver's control API client, authenticated with a bearer token.

The API: docs/architecture.md, 'Control API', and docs/control-api.md.

The token is sent in the ``Authorization`` header and never logged. Every answer
is read with :mod:`barrier_runtime.control_document`, the contract the driver
writes with: one spelling per field; a body this operator cannot read (a newer
API version, a field missing or of the wrong type) is an error naming the field.
"""

from __future__ import annotations

import os
from typing import Any

import aiohttp

from barrier_runtime import control_document as contract
from barrier_runtime import control_requests
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


def _kind(name: str) -> types.CheckpointKind:
    return types.CheckpointKind(name)


def parse_completed(entry: contract.CheckpointEntryDoc | None) -> CheckpointInfo | None:
    if entry is None:
        return None
    return CheckpointInfo(
        id=entry["id"],
        kind=_kind(entry["kind"]),
        path=entry["path"],
        time=entry["completion_timestamp"],
        duration_seconds=entry["duration"],
        size_bytes=entry["size"],
        uploaded_bytes=entry.get("uploaded_size"),
    )


def parse_failed(entry: contract.CheckpointEntryDoc | None) -> FailedInfo | None:
    if entry is None:
        return None
    return FailedInfo(
        id=entry["id"],
        reason=entry["failure_reason"] or "unknown",
        time=entry["failure_timestamp"],
    )


def parse_entry(entry: contract.CheckpointEntryDoc) -> HistoryEntry:
    """One ``history[]`` entry."""
    return HistoryEntry(
        id=entry["id"],
        status=EntryStatus(entry["status"]),
        kind=_kind(entry["kind"]),
        path=entry["path"],
        trigger_time=entry["trigger_timestamp"],
        completion_time=entry["completion_timestamp"],
        failure_reason=entry["failure_reason"],
    )


def parse_checkpoints(
    doc: contract.CheckpointsDoc, job: contract.JobDoc | None, ready: bool
) -> ControlView:
    """Turn ``GET /v1/checkpoints`` (+ ``/v1/job``) into a :class:`ControlView`."""
    latest = doc["latest"]
    running = latest["in_progress"]
    triggers = [h["trigger_timestamp"] for h in doc["history"]]
    if running is not None:
        triggers.append(running["trigger_timestamp"])
    return ControlView(
        reachable=True,
        ready=ready,
        job_state=None if job is None else job["state"],
        in_progress=doc["counts"]["in_progress"],
        last_trigger_time=max(triggers, default=None),
        latest_completed=parse_completed(latest["completed"]),
        latest_failed=parse_failed(latest["failed"]),
        consecutive_failures=doc["consecutive_failures"],
        failure_times=() if job is None else tuple(job["failure_timestamps"]),
        last_failure=None if job is None else job["failure"],
        history=tuple(parse_entry(h) for h in doc["history"]),
    )


def _refusal(method: str, path: str, status: int, body: object) -> ControlApiError:
    refusal = contract.parse_error(body)
    said = f"HTTP {status}" if refusal is None else refusal["error"]
    return ControlApiError(f"{method} {path} answered {status}: {said}")


class ControlClient:
    """One job's control API."""

    def __init__(self, url: str, token: str | None, timeout: float = 5.0) -> None:
        self._url = url.rstrip("/")
        self._headers = {contract.TOKEN_HEADER: f"Bearer {token}"} if token else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def _call(
        self, method: str, path: str, body: Any = None, timeout: float | None = None
    ) -> tuple[int, object]:
        to = aiohttp.ClientTimeout(total=timeout) if timeout else self._timeout
        try:
            async with (
                aiohttp.ClientSession(timeout=to) as session,
                session.request(method, self._url + path, json=body, headers=self._headers) as resp,
            ):
                try:
                    payload: object = await resp.json(content_type=None)
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
        if cp_status != 200:
            return ControlView(
                reachable=True, ready=False, error=f"GET /v1/checkpoints answered {cp_status}"
            )
        try:
            return parse_checkpoints(
                contract.parse_checkpoints(checkpoints),
                contract.parse_job(job) if job_status == 200 else None,
                ready=ready_status == 200,
            )
        except contract.ControlDocumentError as exc:
            return ControlView(reachable=True, ready=False, error=str(exc))

    async def trigger(self, kind: types.CheckpointKind) -> int:
        status, body = await self._call(
            "POST", "/v1/checkpoints", control_requests.trigger_body(kind)
        )
        if status != 202:
            raise _refusal("POST", "/v1/checkpoints", status, body)
        try:
            return contract.parse_triggered(body)["id"]
        except contract.ControlDocumentError as exc:
            raise ControlApiError(str(exc)) from None

    async def stop_with_savepoint(self, timeout: float) -> tuple[str, int]:
        status, body = await self._call("POST", "/v1/stop", control_requests.stop_body(), timeout)
        if status != 200:
            raise _refusal("POST", "/v1/stop", status, body)
        try:
            stopped = contract.parse_stopped(body)
        except contract.ControlDocumentError as exc:
            raise ControlApiError(str(exc)) from None
        return stopped["path"], stopped["id"]
