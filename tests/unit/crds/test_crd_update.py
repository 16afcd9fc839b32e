"""Updates: immutability (transition rules), the status subresource and ratcheting."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cjob_operator import admission

IMMUTABLE = (
    "spec.maxParallelism: Invalid value: 256: maxParallelism is immutable: it fixes how "
    "keyed state is split into key groups; create a new job to change it"
)


@pytest.fixture
def stored(validator: admission.CustomResourceValidator, minimal: dict[str, Any]) -> dict[str, Any]:
    """The minimal example as the API server stored it (defaults applied)."""
    result = validator.validate_create(minimal)
    assert result.ok, result.message()
    return dict(result.object)


def _changed(stored: dict[str, Any], **spec: Any) -> dict[str, Any]:
    new = copy.deepcopy(stored)
    new["spec"].update(spec)
    return new


def test_changing_max_parallelism_is_rejected(
    validator: admission.CustomResourceValidator, stored: dict[str, Any]
) -> None:
    result = validator.validate_update(_changed(stored, maxParallelism=256), stored)

    assert result.messages == [IMMUTABLE]


def test_a_user_manifest_without_max_parallelism_still_updates(
    validator: admission.CustomResourceValidator, stored: dict[str, Any], minimal: dict[str, Any]
) -> None:
    """The default (128) is applied again, so re-applying the manifest is no change."""
    minimal["spec"]["parallelism"] = 4

    result = validator.validate_update(minimal, stored)

    assert result.ok, result.message()
    assert result.object["spec"]["maxParallelism"] == 128


def test_rescaling_within_max_parallelism_is_accepted(
    validator: admission.CustomResourceValidator, stored: dict[str, Any]
) -> None:
    assert validator.validate_update(_changed(stored, parallelism=64), stored).ok


def test_transition_rules_do_not_run_on_create(
    validator: admission.CustomResourceValidator, minimal: dict[str, Any]
) -> None:
    minimal["spec"]["maxParallelism"] = 256

    assert validator.validate_create(minimal).ok


def test_suspend_resume_and_nonces_are_plain_updates(
    validator: admission.CustomResourceValidator, stored: dict[str, Any]
) -> None:
    for change in (
        {"state": "Suspended"},
        {"state": "suspended"},  # deprecated alias, still accepted in v1alpha1
        {"restartNonce": 1},
        {"checkpointTriggerNonce": 7, "savepointTriggerNonce": 3},
        {"restoreFrom": {"checkpointId": 12}, "restoreNonce": 2},
    ):
        result = validator.validate_update(_changed(stored, **change), stored)
        assert result.ok, (change, result.message())


STATUS = {
    "phase": "Running",
    "observedGeneration": 3,
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "DriverRunning",
            "message": "driver pod wordcount-driver is running",
            "lastTransitionTime": "2025-11-22T08:30:00Z",
            "observedGeneration": 3,
        },
        {"type": "CheckpointHealthy", "status": "True", "reason": "CheckpointCompleted"},
    ],
    "driver": {
        "pod": "wordcount-driver",
        "service": "wordcount-driver",
        "startTime": "2025-11-22T08:29:00Z",
    },
    "checkpoints": {
        "lastCompleted": {
            "id": 42,
            "path": "s3://checkpoints/cjob/default/wordcount/checkpoints/chk-0000000042",
            "time": "2025-11-22T08:31:00Z",
            "durationSeconds": 1.25,
            "sizeBytes": 1048576,
            "trigger": "periodic",
        },
        "lastFailed": {"id": 41, "reason": "TIMEOUT", "time": "2025-11-22T08:30:30Z"},
        "consecutiveFailures": 0,
    },
    "restarts": {"count": 1, "lastTime": "2025-11-22T08:29:00Z", "lastReason": "DriverFailed"},
    "lastReconciledSpec": '{"parallelism": 2}',
    "intent": {"action": "restart", "fromCheckpoint": 42},
    "error": "",
}


def test_status_written_by_the_operator_is_accepted(
    validator: admission.CustomResourceValidator, stored: dict[str, Any]
) -> None:
    new = copy.deepcopy(stored)
    new["status"] = STATUS

    result = validator.validate_status_update(new, stored)

    assert result.ok, result.message()
    assert result.object["status"] == STATUS


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            {"phase": "Crashed"},
            'status.phase: Unsupported value: "Crashed": supported values: "Pending", '
            '"Deploying", "Running", "Suspending", "Suspended", "Upgrading", "Restarting", '
            '"Failed", "Deleting", "Finished"',
        ),
        (
            {"restarts": {"lastTime": "yesterday"}},
            'status.restarts.lastTime: Invalid value: "yesterday": restarts.lastTime '
            'in body must be of type date-time: "yesterday"',
        ),
        (
            {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Ready", "status": "False"},
                ]
            },
            'status.conditions[1]: Duplicate value: {"type":"Ready"}',
        ),
        (
            {"conditions": [{"type": "Ready"}]},
            "status.conditions[0].status: Required value",
        ),
    ],
)
def test_invalid_status_is_rejected(
    validator: admission.CustomResourceValidator,
    stored: dict[str, Any],
    patch: dict[str, Any],
    message: str,
) -> None:
    new = copy.deepcopy(stored)
    new["status"] = patch

    assert message in validator.validate_status_update(new, stored).messages


def test_status_is_dropped_on_create_and_kept_on_spec_updates(
    validator: admission.CustomResourceValidator, minimal: dict[str, Any], stored: dict[str, Any]
) -> None:
    minimal["status"] = {"phase": "Running"}
    assert "status" not in validator.validate_create(minimal).object

    old = copy.deepcopy(stored)
    old["status"] = {"phase": "Running"}
    new = _changed(old, parallelism=4)
    new["status"] = {"phase": "Failed"}
    assert validator.validate_update(new, old).object["status"] == {"phase": "Running"}


def test_status_updates_cannot_change_the_spec(
    validator: admission.CustomResourceValidator, stored: dict[str, Any]
) -> None:
    new = _changed(stored, parallelism=1000)
    new["status"] = {"phase": "Running"}

    result = validator.validate_status_update(new, stored)

    assert result.ok
    assert result.object["spec"]["parallelism"] == 2


def test_unchanged_invalid_values_are_ratcheted_to_warnings(
    validator: admission.CustomResourceValidator, stored: dict[str, Any]
) -> None:
    """An object stored before a rule existed can still be updated elsewhere."""
    old = copy.deepcopy(stored)
    old["spec"]["checkpointing"]["minPause"] = "1m"

    untouched = validator.validate_update(_changed(old, parallelism=4), old)
    old_again = copy.deepcopy(old)
    old_again["spec"]["checkpointing"]["retained"] = 5
    touched = validator.validate_update(old_again, old)

    assert untouched.ok
    assert [str(w) for w in untouched.warnings] == [
        "spec.checkpointing.minPause: Invalid value: minPause (1m) must be shorter than "
        "interval (30s)"
    ]
    assert touched.messages == [str(w) for w in untouched.warnings]
