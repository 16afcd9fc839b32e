"""The control API's request bodies: what the clients build, the driver parses back the same."""

from __future__ import annotations

import pytest

from barrier_runtime import control_document, control_requests
from barrier_runtime.core import types


@pytest.mark.parametrize("kind", list(types.CheckpointKind))
def test_a_trigger_body_round_trips(kind: types.CheckpointKind) -> None:
    raw = control_document.to_json(control_requests.trigger_body(kind))
    assert control_requests.parse_trigger(raw) == control_requests.TriggerRequest(kind)


@pytest.mark.parametrize(
    ("built", "parsed"),
    [
        (control_requests.stop_body(), control_requests.StopRequest(True, None)),
        (control_requests.stop_body(timeout=30), control_requests.StopRequest(True, 30.0)),
        (
            control_requests.stop_body(savepoint=False, timeout=2.5),
            control_requests.StopRequest(False, 2.5),
        ),
    ],
)
def test_a_stop_body_round_trips(
    built: control_requests.StopBody, parsed: control_requests.StopRequest
) -> None:
    raw = control_document.to_json(built)
    assert control_requests.parse_stop(raw) == parsed


def test_an_empty_body_means_the_defaults() -> None:
    assert control_requests.parse_trigger(b"") == control_requests.TriggerRequest()
    assert control_requests.parse_stop(b" ") == control_requests.StopRequest()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"knid": "savepoint"}', 'unknown field(s) "knid"; expected only "kind"'),
        (b'{"kind": "snapshot"}', '"kind" must be "checkpoint" or "savepoint", got "snapshot"'),
        (b"[1]", "the request body must be a JSON object, got an array"),
        (b"{", "the request body is not valid JSON"),
    ],
)
def test_a_bad_trigger_body_is_refused_with_one_sentence(raw: bytes, message: str) -> None:
    with pytest.raises(control_requests.BadRequestError) as caught:
        control_requests.parse_trigger(raw)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"savepoint": "yes"}', '"savepoint" must be true or false, got "yes"'),
        (b'{"timeout": 0}', '"timeout" must be a positive number of seconds, got 0'),
        (b'{"timeout": true}', '"timeout" must be a positive number of seconds, got true'),
    ],
)
def test_a_bad_stop_body_is_refused_with_one_sentence(raw: bytes, message: str) -> None:
    with pytest.raises(control_requests.BadRequestError) as caught:
        control_requests.parse_stop(raw)
    assert str(caught.value) == message
