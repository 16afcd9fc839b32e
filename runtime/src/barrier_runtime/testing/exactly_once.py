"""The exactly-once checker: count lost, duplicated and re-ordered records against a crash-free run.

Flink's way of proving exactly-once: a deterministic source with per-key
sequence numbers, a run with faults, and a run without; :func:`check_exactly_once`
compares the two outputs and all three counts must be zero.

>>> expected = [{"key": "a", "seq": 0}, {"key": "a", "seq": 1}]
>>> report = check_exactly_once(expected, [expected[1], expected[0], expected[1]])
>>> report
CheckReport(expected=2, actual=3, lost=0, duplicated=1, out_of_order=2)
>>> report.exactly_once, check_exactly_once(expected, expected).exactly_once
(False, True)
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from barrier_runtime.api.batch import Record


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Counts of what went wrong in an output compared with the crash-free one."""

    expected: int
    actual: int
    lost: int
    duplicated: int
    out_of_order: int

    @property
    def exactly_once(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.out_of_order == 0

    def as_dict(self) -> dict[str, int]:
        return {
            "expected": self.expected,
            "actual": self.actual,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "out_of_order": self.out_of_order,
        }


def check_exactly_once(
    expected: Iterable[Record],
    actual: Iterable[Record],
    *,
    key: str = "key",
    seq: str = "seq",
    identity: Sequence[str] | None = None,
) -> CheckReport:
    """Compare ``actual`` with the crash-free ``expected`` output.

    *lost*: expected records missing from ``actual``; *duplicated*: extra
    copies in ``actual`` (or records never expected); *out_of_order*: times a
    key's ``seq`` went backwards or repeated in ``actual``'s order.

    Records are compared whole unless ``identity`` names the fields that
    identify them: at-least-once output is judged on ``("key", "seq")``
    because replayed records legitimately carry different derived values.
    """
    fields = None if identity is None else tuple(identity)
    want = collections.Counter(_canonical(r, fields) for r in expected)
    actual_list = list(actual)
    got = collections.Counter(_canonical(r, fields) for r in actual_list)
    lost = sum((want - got).values())
    duplicated = sum((got - want).values())
    last: dict[object, int] = {}
    out_of_order = 0
    for record in actual_list:
        k, s = record[key], int(record[seq])
        if k in last and s <= last[k]:
            out_of_order += 1
        last[k] = max(s, last.get(k, s))
    return CheckReport(
        expected=sum(want.values()),
        actual=len(actual_list),
        lost=lost,
        duplicated=duplicated,
        out_of_order=out_of_order,
    )


def _canonical(record: Record, fields: tuple[str, ...] | None) -> str:
    if fields is not None:
        record = {f: record.get(f) for f in fields}
    return json.dumps(record, sort_keys=True, default=str)
