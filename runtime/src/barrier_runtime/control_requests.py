"""The control API's request bodies, typed on both sides (clients write, the driver parses).

The operator (``cjob_operator.act.control``) and the ``cjob`` CLI build each
body with its ``*_body`` function and send it with
:func:`~barrier_runtime.control_document.to_json`; the driver's control server
parses it with the ``parse_*`` function of its endpoint. The answers are in
:mod:`barrier_runtime.control_document`. Pure: no I/O, so the operator's image
imports it too.

* ``POST /v1/checkpoints`` ← :class:`TriggerBody` (:func:`trigger_body`);
* ``POST /v1/stop`` ← :class:`StopBody` (:func:`stop_body`).

A body that is not a JSON object, names an unknown field, or has a field of
the wrong type is refused with one sentence saying what to send instead: a
typo such as ``{"knid": "savepoint"}`` must never quietly take a checkpoint.
An empty body means "all defaults".

>>> parse_trigger(b'{"kind": "savepoint"}')
TriggerRequest(kind=<CheckpointKind.SAVEPOINT: 'savepoint'>)
>>> parse_trigger(b"").kind.value
'checkpoint'
>>> parse_stop(b'{"savepoint": true, "timeout": 30}')
StopRequest(savepoint=True, timeout=30.0)
>>> parse_trigger(b'{"knid": "savepoint"}')
Traceback (most recent call last):
...
barrier_runtime.control_requests.BadRequestError: unknown field(s) "knid"; expected only "kind"
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from barrier_runtime.core import types


class BadRequestError(ValueError):
    """The request body cannot be understood; the message says what to send."""


class TriggerBody(TypedDict):
    """``POST /v1/checkpoints``: ``kind`` is ``"checkpoint"`` (the default) or ``"savepoint"``."""

    kind: str


class StopBody(TypedDict):
    """``POST /v1/stop``: stop with a savepoint (default), waiting at most ``timeout`` s for it."""

    savepoint: bool
    timeout: NotRequired[float]


def trigger_body(kind: types.CheckpointKind) -> TriggerBody:
    return {"kind": kind.value}


def stop_body(*, savepoint: bool = True, timeout: float | None = None) -> StopBody:
    body: StopBody = {"savepoint": savepoint}
    if timeout is not None:
        body["timeout"] = timeout
    return body


@dataclass(frozen=True, slots=True)
class TriggerRequest:
    """``POST /v1/checkpoints``."""

    kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT


@dataclass(frozen=True, slots=True)
class StopRequest:
    """``POST /v1/stop``; ``timeout`` (seconds) bounds the wait for the savepoint."""

    savepoint: bool = True
    timeout: float | None = None


def parse_trigger(raw: bytes) -> TriggerRequest:
    doc = _object(raw, allowed=("kind",))
    kind = doc.get("kind", types.CheckpointKind.CHECKPOINT.value)
    kinds = {k.value: k for k in types.CheckpointKind}
    if not isinstance(kind, str) or kind not in kinds:
        raise BadRequestError(f'"kind" must be "checkpoint" or "savepoint", got {json.dumps(kind)}')
    return TriggerRequest(kinds[kind])


def parse_stop(raw: bytes) -> StopRequest:
    doc = _object(raw, allowed=("savepoint", "timeout"))
    savepoint = doc.get("savepoint", True)
    if not isinstance(savepoint, bool):
        raise BadRequestError(f'"savepoint" must be true or false, got {json.dumps(savepoint)}')
    timeout = doc.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise BadRequestError(
            f'"timeout" must be a positive number of seconds, got {json.dumps(timeout)}'
        )
    return StopRequest(savepoint, None if timeout is None else float(timeout))


def _object(raw: bytes, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    if not raw.strip():
        return {}
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequestError(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequestError(f"the request body must be a JSON object, got {_json_type(doc)}")
    unknown = sorted(set(doc) - set(allowed))
    if unknown:
        names = ", ".join(f'"{name}"' for name in unknown)
        expected = ", ".join(f'"{name}"' for name in allowed)
        raise BadRequestError(f"unknown field(s) {names}; expected only {expected}")
    return doc


def _json_type(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    return names.get(type(value), type(value).__name__)
