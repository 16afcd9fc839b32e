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
until the caller's deadline.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from barrier_runtime.cli import failures

POLL_INTERVAL = 0.2
"""Seconds between two questions while waiting for a savepoint or a busy job."""
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

    def job(self) -> dict[str, Any]:
        """``GET /v1/job``: checks the URL and the token on the way."""
        answer = self._call("GET", "/v1/job")
        if answer.status != 200 or not isinstance(answer.doc, dict) or "state" not in answer.doc:
            raise self._refused(answer, "/v1/job")
        return answer.doc

    def stop_with_savepoint(self, timeout: float) -> dict[str, Any]:
        """``POST /v1/stop``: the savepoint's ``id`` and ``path`` once the job stopped."""
        body = {"savepoint": True, "timeout": timeout}
        deadline = time.monotonic() + timeout
        answer = self._until(deadline, "POST", "/v1/stop", body, wait=timeout + 10.0)
        if answer.status == 200 and isinstance(answer.doc, dict) and "path" in answer.doc:
            return answer.doc
        if answer.status == 500:
            raise failures.OperationFailedError(
                f"the job at {self.url} could not take its final savepoint and keeps running: "
                f"{_error(answer)}"
            )
        raise self._refused(answer, "/v1/stop")

    def savepoint(self, timeout: float) -> dict[str, Any]:
        """Trigger a savepoint and wait until it completed; its entry (``id``, ``path``, …)."""
        deadline = time.monotonic() + timeout
        answer = self._until(deadline, "POST", "/v1/checkpoints", {"kind": "savepoint"})
        if answer.status != 202 or not isinstance(answer.doc, dict) or "id" not in answer.doc:
            raise self._refused(answer, "/v1/checkpoints")
        checkpoint_id = int(answer.doc["id"])
        while True:
            entry = self._call("GET", f"/v1/checkpoints/{checkpoint_id}")
            if entry.status != 200 or not isinstance(entry.doc, dict):
                raise self._refused(entry, f"/v1/checkpoints/{checkpoint_id}")
            if entry.doc.get("status") == "completed":
                return entry.doc
            if entry.doc.get("status") == "failed":
                reason = entry.doc.get("failure_message") or entry.doc.get("failure_reason")
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
            request.add_header("Authorization", f"Bearer {self._token}")
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
        reason = doc.get("reason") if isinstance(doc, dict) else None
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
    doc = answer.doc
    if isinstance(doc, dict) and doc.get("error"):
        return str(doc["error"])
    return f"HTTP {answer.status}"


def _reason(exc: BaseException) -> str:
    reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(reason, socket.gaierror):
        return "the host name does not resolve"
    return str(reason) or type(reason).__name__
