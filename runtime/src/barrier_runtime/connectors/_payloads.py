"""How a broker source (Kafka, NATS) turns a message's payload into a record, and what it
does with one that holds none.

``payload="json"`` (the default): the payload is one JSON value; an object is the record,
any other value becomes ``{"value": v}``. ``"text"``: ``{"value": the UTF-8 text}``
(undecodable bytes replaced). ``"bytes"``: ``{"value": the bytes}``. Only JSON can be
malformed: :func:`reject` fails the job (``on_error="fail"``) or logs that the message is
skipped (``"skip"``; the source counts it).

>>> record_of(b'{"n": 1}', "json"), record_of(b"3", "json"), record_of(b"hi", "text")
({'n': 1}, {'value': 3}, {'value': 'hi'})
>>> record_of(b"{", "json")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
barrier_runtime.connectors._payloads.NotJsonError: not valid JSON (Expecting property name ...)
"""

from __future__ import annotations

import json
import logging
from typing import Literal

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.connectors import errors

log = logging.getLogger(__name__)

Payload = Literal["json", "text", "bytes"]
OnError = Literal["fail", "skip"]


class NotJsonError(ValueError):
    """A ``payload="json"`` message whose payload is not one JSON value."""


def record_of(data: bytes, payload: Payload) -> batch_mod.Record:
    """The record ``data`` holds; raises :class:`NotJsonError` when it holds none."""
    if payload == "bytes":
        return {"value": data}
    if payload == "text":
        return {"value": data.decode("utf-8", errors="replace")}
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotJsonError(f"not valid JSON ({exc})") from None
    return value if isinstance(value, dict) else {"value": value}


def reject(message: str, on_error: OnError) -> None:
    """Raise :class:`~barrier_runtime.connectors.errors.MalformedRecordError` for ``message``
    (a malformed record and where it is), or with ``on_error="skip"`` log that it is skipped."""
    if on_error == "fail":
        raise errors.MalformedRecordError(f"{message}; fix the producer or use on_error='skip'")
    log.warning("skipping %s", message)
