"""A client of a running job's control API (docs/control-api.md): ``cjob stop``, ``cjob savepoint``.

Only the standard library: JSON over HTTP with a bearer token. What can go
wrong becomes one named error with one sentence:

* nothing answers at the URL, the token is refused, the URL is not a ``cjob``
  control API, or the job is over → :class:`ControlUnreachableError` /
  :class:`ControlRefusedError` (mistakes: exit 2);
* the job answered but its savepoint failed or did not finish in time →
  :class:`~barrier_runtime.cli.failures.OperationFailedError` (exit 1).

A job that is starting or restarting (``503``), or busy with another
checkpoint (``409`` ``too-many-pending`` / ``min-pause``), is asked again
until the caller's deadline. Every answer is read with
:mod:`barrier_runtime.control_document`, the contract the driver writes with.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from barrier_runtime import control_document as contract
from barrier_runtime import control_requests
from barrier_runtime.cli import failures
from barrier_runtime.core import types

POLL_INTERVAL = 0.2
"""Seconds between two questions while waiting for a savepoint or a busy job."""
_D = TypeVar("_D")
_BUSY_REASONS = frozenset({"too-many-pending", "min-pause"})
"""``409`` reasons that pass: another checkpoint is in flight, or the pause after one."""


class ControlUnreachableError(ValueError):
    """Nothing answers at the control API's URL."""


class ControlRefusedError(ValueError):
    """The control API refused the request (token, not a cjob API, job not running)."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    doc: Any
    retry: bool
    """The job asks to be asked again later (starting, restarting, busy)."""


class ControlClient:
    """Speaks to one job's control API at ``url`` with ``token`` (``None``: no token)."""

    def __init__(self, url: str, token: str | None, *, request_timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = request_timeout

    def job(self) -> contract.JobDoc:
        """``GET /v1/job``: checks the URL and the token on the way."""
        answer = self._call("GET", "/v1/job")
        if answer.status != 200:
            raise self._refused(answer, "/v1/job")
        return self._read(contract.parse_job, answer)

    def stop_with_savepoint(self, timeout: float) -> contract.StoppedDoc:
        """``POST /v1/stop``: the savepoint's ``id`` and ``path`` once the job stopped."""
        body = control_requests.stop_body(timeout=timeout)
        deadline = time.monotonic() + timeout
        answer = self._until(deadline, "POST", "/v1/stop", body, wait=timeout + 10.0)
        if answer.status == 200:
            return self._read(contract.parse_stopped, answer)
        if answer.status == 500:
            raise failures.OperationFailedError(
                f"the job at {self.url} could not take its final savepoint and keeps running: "
                f"{_error(answer)}"
            )
        raise self._refused(answer, "/v1/stop")

    def savepoint(self, timeout: float) -> contract.CheckpointEntryDoc:
        """Trigger a savepoint and wait until it completed; its entry (``id``, ``path``, …)."""
        deadline = time.monotonic() + timeout
        answer = self._until(
            deadline,
            "POST",
            "/v1/checkpoints",
            control_requests.trigger_body(types.CheckpointKind.SAVEPOINT),
        )
        if answer.status != 202:
            raise self._refused(answer, "/v1/checkpoints")
        checkpoint_id = self._read(contract.parse_triggered, answer)["id"]
        while True:
            found = self._call("GET", f"/v1/checkpoints/{checkpoint_id}")
            if found.status != 200:
                raise self._refused(found, f"/v1/checkpoints/{checkpoint_id}")
            entry = self._read(contract.parse_entry, found)
            if entry["status"] == "completed":
                return entry
            if entry["status"] == "failed":
                reason = entry["failure_message"] or entry["failure_reason"]
                raise failures.OperationFailedError(
                    f"savepoint {checkpoint_id} of the job at {self.url} failed: {reason}"
                )
            if time.monotonic() >= deadline:
                raise failures.OperationFailedError(
                    f"savepoint {checkpoint_id} of the job at {self.url} did not complete within "
                    f"{timeout:g}s (it may still complete; cjob checkpoints list shows it then): "
                    "raise --timeout"
                )
            time.sleep(POLL_INTERVAL)

    # -- transport ------------------------------------------------------------------

    def _read(self, parse: Callable[[object], _D], answer: Answer) -> _D:
        try:
            return parse(answer.doc)
        except contract.ControlDocumentError as exc:
            raise ControlRefusedError(
                f"the control API at {self.url} answered what this cjob cannot read: {exc}"
            ) from None

    def _until(
        self, deadline: float, method: str, path: str, body: Any, *, wait: float | None = None
    ) -> Answer:
        """Ask until the job stops asking to be asked later, or the deadline passes."""
        while True:
            answer = self._call(method, path, body, wait=wait)
            if not answer.retry or time.monotonic() >= deadline:
                return answer
            time.sleep(POLL_INTERVAL)

    def _call(
        self, method: str, path: str, body: Any = None, *, wait: float | None = None
    ) -> Answer:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header(contract.TOKEN_HEADER, f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=wait or self._timeout) as response:
                return self._answer(response.status, response.read(), path)
        except urllib.error.HTTPError as refused:
            with refused:
                answer = self._answer(refused.code, refused.read(), path)
            if answer.status == 401:
                raise ControlRefusedError(
                    f"the control API at {self.url} refused the token ({_error(answer)}): pass "
                    "--token-file FILE or set $CJOB_CONTROL_TOKEN to the job's token"
                ) from None
            return answer
        except (urllib.error.URLError, OSError) as exc:
            raise ControlUnreachableError(
                f"nothing answers at {self.url} ({_reason(exc)}): is the job still running? "
                "(cjob run serves its control API while it runs; check --url)"
            ) from exc

    def _answer(self, status: int, raw: bytes, path: str) -> Answer:
        try:
            doc = json.loads(raw) if raw.strip() else {}
        except (ValueError, UnicodeDecodeError):
            raise ControlRefusedError(
                f"{self.url} is not a cjob control API (HTTP {status} with a body that is not "
                f"JSON on {path}): check --url"
            ) from None
        refusal = contract.parse_error(doc)
        reason = None if refusal is None else refusal.get("reason")
        # 503: starting or restarting; a 409 for any other reason (the job is over, a stop is
        # under way) does not pass by asking again
        retry = status == 503 or (status == 409 and reason in _BUSY_REASONS)
        return Answer(status, doc, retry)

    def _refused(self, answer: Answer, path: str) -> Exception:
        if answer.status == 404 and path.startswith("/v1/job"):
            return ControlRefusedError(
                f"{self.url} is not a cjob control API (HTTP 404 on {path}): check --url"
            )
        if answer.status in (409, 503):
            return ControlRefusedError(f"the job at {self.url} refused: {_error(answer)}")
        return ControlRefusedError(
            f"the control API at {self.url} answered HTTP {answer.status} on {path}: "
            f"{_error(answer)}"
        )


def _error(answer: Answer) -> str:
    refusal = contract.parse_error(answer.doc)
    return f"HTTP {answer.status}" if refusal is None or not refusal["error"] else refusal["error"]


def _reason(exc: BaseException) -> str:
    reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(reason, socket.gaierror):
        return "the host name does not resolve"
    return str(reason) or type(reason).__name__
