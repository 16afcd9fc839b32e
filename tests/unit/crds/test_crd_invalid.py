"""Invalid manifests are rejected, each with the exact, readable message.

Every file under ``invalid/`` starts with a comment saying why it is invalid and one
``# expect: <message>`` line per error the API server returns (in order).
"""

from __future__ import annotations

from pathlib import Path

import crdcheck
import pytest
import yaml

INVALID = Path(__file__).resolve().parent / "invalid"
FIXTURES = sorted(INVALID.glob("*.yaml"))


def _expected(path: Path) -> list[str]:
    return [
        line.removeprefix("# expect: ")
        for line in path.read_text().splitlines()
        if line.startswith("# expect: ")
    ]


def test_there_are_enough_invalid_fixtures() -> None:
    assert len(FIXTURES) >= 12


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_invalid_manifest_is_rejected_with_its_message(
    validator: crdcheck.CustomResourceValidator, path: Path
) -> None:
    expected = _expected(path)
    assert expected, f"{path.name} has no '# expect:' line"

    result = validator.validate_create(yaml.safe_load(path.read_text()))

    assert not result.ok
    assert result.messages == expected


def test_rejection_reads_like_the_api_server(validator: crdcheck.CustomResourceValidator) -> None:
    job = yaml.safe_load((INVALID / "parallelism-above-max.yaml").read_text())

    assert validator.validate_create(job).message() == (
        'CheckpointedJob.checkpointed.dev "bad" is invalid: spec.parallelism: Invalid value: '
        "parallelism (300) must not exceed maxParallelism (128), the number of key groups "
        "the job state is split into"
    )


def test_several_errors_are_listed_together(validator: crdcheck.CustomResourceValidator) -> None:
    job = yaml.safe_load((INVALID / "storage-missing.yaml").read_text())

    message = validator.validate_create(job).message()

    assert message.startswith('CheckpointedJob.checkpointed.dev "bad" is invalid: [spec.storage')
    assert message.endswith("correct the existing errors to complete validation]")


def test_unknown_fields_fail_decoding_like_a_strict_client(
    validator: crdcheck.CustomResourceValidator,
) -> None:
    job = yaml.safe_load((INVALID / "unknown-field.yaml").read_text())

    assert validator.validate_create(job).message() == (
        'CheckpointedJob in version "v1alpha1" cannot be handled as a CheckpointedJob: '
        'strict decoding error: unknown field "spec.paralelism"'
    )
