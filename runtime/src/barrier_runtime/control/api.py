"""The control API's routes over a :class:`~.job.JobControl`, independent of any HTTP server.

:meth:`ControlApi.handle` takes a parsed :class:`Request` and returns a
:class:`Response`; :mod:`barrier_runtime.control.http` only moves bytes.
Order of checks for a request:

1. ``/healthz``, ``/readyz`` and ``/metrics`` are open (probes and Prometheus
   scrapes carry no job token; metrics hold no secrets and change nothing);
   every other path (known or not) needs the bearer token first → ``401``
   (unauthenticated callers learn nothing about the API).
2. Unknown path → ``404``; known path, wrong method → ``405`` with ``Allow``.
3. The route runs; an :class:`ApiError` becomes its status with
   ``{"error": ..., "reason"?: ...}``; anything else is logged and becomes ``500``.

Every answer is JSON except ``/metrics`` (Prometheus text).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from prometheus_client import exposition

from barrier_runtime import control_document, control_requests
from barrier_runtime.control import auth, job, metrics, views
from barrier_runtime.core import types

log = logging.getLogger(__name__)

JSON_CONTENT_TYPE = "application/json"
DEFAULT_STOP_TIMEOUT = 120.0

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    """Without the query string."""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Lower-case names."""
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = JSON_CONTENT_TYPE
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, status: int, doc: Any, headers: tuple[tuple[str, str], ...] = ()) -> Response:
        return cls(status, control_document.to_json(doc), JSON_CONTENT_TYPE, headers)


class ApiError(Exception):
    """A request the API refuses; ``reason`` is a machine-readable slug."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str | None = None,
        headers: tuple[tuple[str, str], ...] = (),
        **extra: int | str,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason
        self.headers = headers
        self.extra = extra

    def response(self) -> Response:
        doc = control_document.error_doc(self.message, self.reason, **self.extra)
        return Response.json(self.status, doc, self.headers)


Handler = Callable[[Request, Mapping[str, str]], Response]


@dataclass(frozen=True, slots=True)
class Route:
    pattern: re.Pattern[str]
    methods: Mapping[str, Handler]
    public: bool = False


class ControlApi:
    """The routes of the control API over one job (docs/architecture.md, 'Control API')."""

    def __init__(
        self,
        job_control: job.JobControl,
        *,
        authenticator: auth.BearerAuth,
        job_metrics: metrics.JobMetrics,
        storage: str | None = None,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
    ) -> None:
        if stop_timeout <= 0:
            raise ValueError(f"stop_timeout must be positive, got {stop_timeout}")
        self._job = job_control
        self._auth = authenticator
        self._metrics = job_metrics
        self._storage = storage
        self._stop_timeout = stop_timeout
        self._stopping = threading.Lock()
        self.routes = (
            _route(r"/healthz", public=True, GET=self._healthz),
            _route(r"/readyz", public=True, GET=self._readyz),
            _route(r"/metrics", public=True, GET=self._prometheus),
            _route(r"/v1/job", GET=self._job_info),
            _route(r"/v1/checkpoints", GET=self._checkpoints, POST=self._trigger),
            _route(r"/v1/checkpoints/(?P<id>[^/]+)", GET=self._checkpoint),
            _route(r"/v1/stop", POST=self._stop),
        )

    def handle(self, request: Request) -> Response:
        path = request.path.rstrip("/") or "/"
        try:
            route, params = self._match(path)
            if route is None or not route.public:
                verdict = self._auth.check(request.headers.get("authorization"))
                if verdict is not auth.AuthVerdict.OK:
                    raise ApiError(
                        401,
                        verdict.message,
                        reason="unauthorized",
                        headers=(("WWW-Authenticate", auth.challenge(verdict)),),
                    )
            if route is None:
                raise ApiError(404, f"no such endpoint: {path}", reason="not-found")
            handler = route.methods.get(request.method)
            if handler is None:
                allowed = ", ".join(sorted(route.methods))
                raise ApiError(
                    405,
                    f"{request.method} is not allowed on {path}; use {allowed}",
                    reason="method-not-allowed",
                    headers=(("Allow", allowed),),
                )
            return handler(request, params)
        except ApiError as refused:
            return refused.response()
        except Exception as exc:
            log.exception("control API: %s %s failed", request.method, path)
            message = f"internal error: {type(exc).__name__}: {exc}"
            return Response.json(500, control_document.error_doc(message, "internal"))

    def _match(self, path: str) -> tuple[Route | None, Mapping[str, str]]:
        for route in self.routes:
            found = route.pattern.fullmatch(path)
            if found is not None:
                return route, found.groupdict()
        return None, {}

    # -- probes and metrics -----------------------------------------------------------

    def _healthz(self, request: Request, params: Mapping[str, str]) -> Response:
        return Response.json(200, {"status": "ok"})

    def _readyz(self, request: Request, params: Mapping[str, str]) -> Response:
        try:
            info = self._job.info()
        except Exception as exc:
            return Response.json(503, {"status": "not-ready", "error": str(exc)})
        ready = info.ready and info.state is job.JobState.RUNNING
        doc = {"status": "ready" if ready else "not-ready", "state": info.state.value}
        return Response.json(200 if ready else 503, doc)

    def _prometheus(self, request: Request, params: Mapping[str, str]) -> Response:
        encoder, content_type = exposition.choose_encoder(request.headers.get("accept", ""))
        return Response(200, encoder(self._metrics.registry), content_type)

    # -- job and checkpoints ----------------------------------------------------------

    def _job_info(self, request: Request, params: Mapping[str, str]) -> Response:
        return Response.json(200, views.job_view(self._job.info(), self._storage))

    def _checkpoints(self, request: Request, params: Mapping[str, str]) -> Response:
        return Response.json(200, views.checkpoints_view(self._job.checkpoint_stats()))

    def _checkpoint(self, request: Request, params: Mapping[str, str]) -> Response:
        raw = params["id"]
        if not raw.isdigit():
            raise ApiError(
                400, f"checkpoint id must be a non-negative integer, got {raw!r}", reason="bad-id"
            )
        checkpoint_id = types.CheckpointId(int(raw))
        entry = self._job.checkpoint_stats().entry(checkpoint_id)
        if entry is None:
            raise ApiError(
                404,
                f"checkpoint {checkpoint_id} is unknown: never triggered by this job, "
                f"or too old to be in the history",
                reason="not-found",
            )
        return Response.json(200, views.checkpoint_view(entry))

    def _trigger(self, request: Request, params: Mapping[str, str]) -> Response:
        wanted = _parsed(control_requests.parse_trigger, request.body)
        _require_running(self._job.info(), f"cannot trigger a {wanted.kind.value}")
        outcome = self._job.trigger_checkpoint(wanted.kind)
        if outcome.ok and outcome.checkpoint_id is not None:
            cid = int(outcome.checkpoint_id)
            accepted: control_document.TriggeredDoc = {
                "api_version": control_document.API_VERSION,
                "id": cid,
                "kind": outcome.kind.value,
                "status": "in-progress",
                "message": outcome.message,
            }
            return Response.json(202, accepted, headers=(("Location", f"/v1/checkpoints/{cid}"),))
        reason = outcome.failure.value if outcome.failure is not None else "rejected"
        if outcome.checkpoint_id is None:
            raise ApiError(409, outcome.message or f"{outcome.kind.value} rejected", reason=reason)
        status = 503 if outcome.failure is types.FailureReason.TASKS_NOT_RUNNING else 409
        raise ApiError(status, outcome.message, reason=reason, id=int(outcome.checkpoint_id))

    def _stop(self, request: Request, params: Mapping[str, str]) -> Response:
        wanted = _parsed(control_requests.parse_stop, request.body)
        if not wanted.savepoint:
            raise ApiError(
                400,
                "stop without savepoint is not supported; use savepoint: true",
                reason="unsupported",
            )
        if not self._stopping.acquire(blocking=False):
            raise ApiError(409, "a stop-with-savepoint is already in progress", reason="stopping")
        try:
            _require_running(self._job.info(), "cannot stop with a savepoint")
            timeout = min(wanted.timeout or self._stop_timeout, self._stop_timeout)
            log.info("control API: stop with savepoint (timeout %.0fs)", timeout)
            try:
                outcome = self._job.stop_with_savepoint(timeout)
            except job.SavepointFailedError as exc:
                raise ApiError(500, str(exc), reason="savepoint-failed") from None
            if not outcome.completed or outcome.path is None:
                raise ApiError(
                    500,
                    f"stop-with-savepoint did not complete: {outcome.message or outcome.status}",
                    reason="savepoint-failed",
                    id=int(outcome.checkpoint_id),
                )
            stopped: control_document.StoppedDoc = {
                "api_version": control_document.API_VERSION,
                "id": int(outcome.checkpoint_id),
                "kind": outcome.kind.value,
                "status": outcome.status.value,
                "path": outcome.path,
            }
            return Response.json(200, stopped)
        finally:
            self._stopping.release()


def _route(pattern: str, *, public: bool = False, **methods: Handler) -> Route:
    return Route(re.compile(pattern), methods, public)


def _parsed(parse: Callable[[bytes], _T], body: bytes) -> _T:
    try:
        return parse(body)
    except control_requests.BadRequestError as exc:
        raise ApiError(400, str(exc), reason="bad-request") from None


_TRANSIENT = frozenset({job.JobState.CREATED, job.JobState.RESTARTING, job.JobState.RUNNING})


def _require_running(info: job.JobInfo, action: str) -> None:
    """``503`` (retry later) while the job is starting or restarting, ``409`` once it is over."""
    if info.state is job.JobState.RUNNING and info.ready:
        return
    state = info.state.value
    if info.state is job.JobState.RUNNING:
        state += ", subtasks still starting"
    if info.state in _TRANSIENT:
        raise ApiError(
            503,
            f"{action}: the job is not running yet (state {state}); retry later",
            reason="job-not-running",
            headers=(("Retry-After", "1"),),
            state=info.state.value,
        )
    raise ApiError(
        409,
        f"{action}: the job is not running (state {state})",
        reason="job-not-running",
        state=info.state.value,
    )
