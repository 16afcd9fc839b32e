"""Failure classes: which failures a restart can heal, and what identifies a poisoned record."""

import pytest

from barrier_runtime import task_failure
from barrier_runtime.connectors.errors import MalformedRecordError
from barrier_runtime.spark.pipeline import InvalidPipelineError
from barrier_runtime.task_failure import FailureClass, UserFunctionError


def _raised_in_user_code(record: dict) -> UserFunctionError:
    def parse(r: dict) -> int:
        return r["n"] // r["d"]

    try:
        parse(record)
    except ZeroDivisionError as exc:
        return UserFunctionError("parse", record, exc)
    raise AssertionError("parse did not raise")


def test_a_user_function_error_names_the_step_the_error_and_the_record() -> None:
    failure = task_failure.describe(_raised_in_user_code({"n": 1, "d": 0}))
    assert failure.failure_class is FailureClass.RECORD
    assert failure.step == "parse"
    assert failure.summary == (
        "UserFunctionError: step 'parse' raised ZeroDivisionError: integer division or "
        "modulo by zero on record {'n': 1, 'd': 0}"
    )


def test_its_traceback_shows_the_users_code_not_the_runtime() -> None:
    detail = task_failure.describe(_raised_in_user_code({"n": 1, "d": 0})).detail
    assert "in parse" in detail and 'return r["n"] // r["d"]' in detail
    assert "runtime/src/barrier_runtime" not in detail
    assert detail.rstrip().endswith("ZeroDivisionError: integer division or modulo by zero")


def test_the_same_record_failing_the_same_way_has_the_same_fingerprint() -> None:
    first = task_failure.describe(_raised_in_user_code({"n": 1, "d": 0}))
    again = task_failure.describe(_raised_in_user_code({"n": 1, "d": 0}))
    other = task_failure.describe(_raised_in_user_code({"n": 2, "d": 0}))
    assert first.fingerprint == again.fingerprint != other.fingerprint


def test_a_huge_record_is_shortened_in_the_message() -> None:
    failure = task_failure.describe(_raised_in_user_code({"n": 1, "d": 0, "blob": "x" * 10_000}))
    assert len(failure.summary) < 320 and failure.summary.endswith("xxx…")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            MalformedRecordError("malformed record in in/a.jsonl line 7: not valid JSON"),
            FailureClass.RECORD,
        ),
        (InvalidPipelineError("the pipeline differs from the driver's"), FailureClass.PERMANENT),
        (ConnectionResetError("peer reset"), FailureClass.TRANSIENT),
        (RuntimeError("worker lost"), FailureClass.TRANSIENT),
    ],
)
def test_the_class_comes_from_the_exception(exc: BaseException, expected: FailureClass) -> None:
    assert task_failure.describe(exc).failure_class is expected


def test_a_cause_further_down_the_chain_decides() -> None:
    try:
        try:
            raise MalformedRecordError("malformed record in a.jsonl line 3: bad")
        except MalformedRecordError as inner:
            raise RuntimeError("the source failed") from inner
    except RuntimeError as outer:
        failure = task_failure.describe(outer)
    assert failure.failure_class is FailureClass.RECORD
    assert failure.summary == "RuntimeError: the source failed"


def test_a_carried_report_wins_so_remote_failures_keep_their_class() -> None:
    report = task_failure.TaskFailure(FailureClass.PERMANENT, "InvalidPipelineError: differs")
    exc = RuntimeError("worker 1: InvalidPipelineError: differs")
    exc.task_failure = report  # type: ignore[attr-defined]
    assert task_failure.describe(exc) is report
