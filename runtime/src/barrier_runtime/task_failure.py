"""What a failed task tells its driver: which kind of failure it was, and which one.

A restart heals some failures and never others. Each failure falls in one
:class:`FailureClass`:

* ``TRANSIENT``: a lost worker, an unreachable store, a broken connection;
  the restart strategy applies.
* ``RECORD``: the failure follows a record, so replaying the same input hits it
  again: the user's function raised on a record (:class:`UserFunctionError`) or
  a source read a malformed one under ``on_error="fail"``. Its
  :attr:`TaskFailure.fingerprint` names the step, the error and the record;
  the driver gives up once the same fingerprint failed a configured number of
  attempts in a row.
* ``PERMANENT``: nothing about the job can change by retrying (an invalid
  pipeline, a configuration the job cannot run with); the driver gives up at
  once.

Exceptions say which class they are by inheriting :class:`RecordFailure` or
:class:`PermanentFailure`, or by carrying a :class:`TaskFailure` as
``task_failure`` (a remote worker's report); everything else is transient.
This module is on the ground floor: it imports nothing from the runtime.

>>> try:
...     raise UserFunctionError("parse", {"line": 7}, ZeroDivisionError("division by zero"))
... except UserFunctionError as exc:
...     failure = describe(exc)
>>> failure.failure_class.value, failure.step
('record', 'parse')
>>> failure.summary
"UserFunctionError: step 'parse' raised ZeroDivisionError: division by zero on record {'line': 7}"
"""

from __future__ import annotations

import enum
import hashlib
import pathlib
import traceback
from dataclasses import dataclass
from types import TracebackType

_RUNTIME_DIR = str(pathlib.Path(__file__).resolve().parent)
RECORD_LIMIT = 200
"""Characters of a record shown in a failure message."""
DETAIL_LIMIT = 16_000
"""Characters of a traceback kept in a report (the end is kept: it holds the raise)."""


class FailureClass(enum.Enum):
    """Whether restarting from the latest checkpoint can heal a failure."""

    TRANSIENT = "transient"
    RECORD = "record"
    PERMANENT = "permanent"


class RecordFailure(Exception):
    """A failure bound to an input record: replaying the same input raises it again."""

    @property
    def fingerprint_parts(self) -> tuple[str, ...]:
        """What identifies this failure across attempts (the message, by default)."""
        return (type(self).__name__, str(self))


class PermanentFailure(Exception):
    """A failure no restart can heal: the job's code or configuration must change."""


class UserFunctionError(RecordFailure):
    """The user's function of step ``step_id`` raised ``cause`` on ``record``."""

    def __init__(self, step_id: str, record: object, cause: BaseException) -> None:
        self.step_id = step_id
        self.record_text = _short_repr(record)
        self.cause_type = type(cause).__name__
        self.cause_text = " ".join(str(cause).split())
        said = f"{self.cause_type}: {self.cause_text}" if self.cause_text else self.cause_type
        super().__init__(f"step {step_id!r} raised {said} on record {self.record_text}")
        self.detail = user_traceback(cause)

    @property
    def fingerprint_parts(self) -> tuple[str, ...]:
        return (self.step_id, self.cause_type, self.cause_text, self.record_text)


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """A failure as the driver sees it: plain values, the same from any host."""

    failure_class: FailureClass
    summary: str
    """``"ExceptionType: message"`` on one line."""
    fingerprint: str | None = None
    """For ``RECORD`` failures: equal for the same step, error and record."""
    step: str | None = None
    """The user's step that raised, when known."""
    detail: str = ""
    """The traceback (of the user's code, for a user-function error)."""


def describe(exc: BaseException) -> TaskFailure:
    """The :class:`TaskFailure` of ``exc`` (following ``task_failure`` and the cause chain)."""
    carried = getattr(exc, "task_failure", None)
    if isinstance(carried, TaskFailure):
        return carried
    found = _classified(exc)
    summary = f"{type(exc).__name__}: {' '.join(str(exc).split())}".rstrip(": ")
    if isinstance(found, RecordFailure):
        parts = found.fingerprint_parts
        return TaskFailure(
            FailureClass.RECORD,
            summary,
            fingerprint=hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32],
            step=getattr(found, "step_id", None),
            detail=getattr(found, "detail", "") or _detail(exc),
        )
    if isinstance(found, PermanentFailure):
        return TaskFailure(FailureClass.PERMANENT, summary, detail=_detail(exc))
    return TaskFailure(FailureClass.TRANSIENT, summary, detail=_detail(exc))


def _classified(exc: BaseException) -> BaseException | None:
    """``exc`` or the first exception in its cause chain that names its class."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, RecordFailure | PermanentFailure):
            return current
        seen.add(id(current))
        current = current.__cause__
    return None


def user_traceback(cause: BaseException) -> str:
    """``cause``'s traceback without the runtime's own frames (they say nothing to a user)."""
    tb: TracebackType | None = cause.__traceback__
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(_RUNTIME_DIR)]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    lines += traceback.format_exception_only(type(cause), cause)
    return _limit("".join(lines))


def _short_repr(record: object) -> str:
    try:
        text = repr(record)
    except Exception as exc:  # a user type whose __repr__ fails
        text = f"<{type(record).__name__} (repr failed: {type(exc).__name__})>"
    return text if len(text) <= RECORD_LIMIT else text[: RECORD_LIMIT - 1] + "…"


def _detail(exc: BaseException) -> str:
    return _limit("".join(traceback.format_exception(exc)))


def _limit(text: str) -> str:
    return text if len(text) <= DETAIL_LIMIT else "…" + text[-(DETAIL_LIMIT - 1) :]
