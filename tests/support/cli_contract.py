"""The CLI's contract for mistakes, shared by the in-process and the subprocess CLI tests.

A mistake of the user or the environment ends ``cjob`` with exit code 2, one
``cjob: error:`` sentence, a ``cjob: details:`` line naming a log file that
holds the traceback, and no traceback on stderr (:meth:`CliOutcome.assert_mistake`).
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass

OK_PIPELINE = """
from barrier_runtime.api import Dataflow
from barrier_runtime.testing import TestingSink, TestingSource
flow = Dataflow("p")
flow.source("in", TestingSource([{"x": 1}])).sink("out", TestingSink())
"""
_DETAILS = re.compile(r"^cjob: details: (\S+) \(or run with --verbose\)$", re.M)


@dataclass(frozen=True)
class CliOutcome:
    """What one ``cjob`` invocation printed, and its exit code."""

    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.err.strip().splitlines()

    @property
    def log(self) -> pathlib.Path:
        match = _DETAILS.search(self.err)
        assert match, self.err
        return pathlib.Path(match.group(1))

    def assert_mistake(self, *words: str, code: int = 2) -> str:
        """Exit ``code`` (2: a mistake in the input; 75: the environment may heal), one
        sentence containing ``words``, the traceback in the log only."""
        assert self.code == code, self.err
        assert "Traceback" not in self.err
        error, details = self.lines
        assert error.startswith("cjob: error: "), self.err
        for word in words:
            assert word in error, f"{word!r} not in {error!r}"
        assert details.startswith("cjob: details: ")
        text = self.log.read_text()
        assert "Traceback (most recent call last)" in text and error in text
        return error.removeprefix("cjob: error: ")


# -- cjob run --json events and docs/json-events.md ---------------------------------------

JSON_EVENTS_DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "json-events.md"
_SECTION = re.compile(r"^### (\w+)\s*$", re.M)
_FIRST_CELL = re.compile(r"^\| ([^|]+) \|", re.M)
_NAME = re.compile(r"`(\w+)`")
COMMON_FIELDS = frozenset({"event", "t"})
"""Fields every event may carry (docs/json-events.md says so before the tables)."""


def documented_event_fields(doc: pathlib.Path = JSON_EVENTS_DOC) -> dict[str, frozenset[str]]:
    """Per event type (a ``### name`` section), the field names its tables document."""
    text = doc.read_text()
    heads = list(_SECTION.finditer(text))
    fields: dict[str, frozenset[str]] = {}
    for head, nxt in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : nxt.start() if nxt else len(text)]
        names = {n for cell in _FIRST_CELL.findall(body) for n in _NAME.findall(cell)}
        fields[head.group(1)] = frozenset(names)
    return fields


def assert_events_documented(events: list[dict[str, object]]) -> None:
    """Every event type ``cjob run --json`` emitted, and every field of it, is in the docs."""
    documented = documented_event_fields()
    missing = sorted(
        f"{event['event']}.{name}"
        for event in events
        for name in event
        if name not in COMMON_FIELDS
        and name not in documented.get(str(event["event"]), frozenset())
    )
    unknown = sorted({str(e["event"]) for e in events} - documented.keys())
    assert not unknown, f"event types missing from {JSON_EVENTS_DOC.name}: {unknown}"
    assert not missing, f"fields missing from {JSON_EVENTS_DOC.name}: {sorted(set(missing))}"
