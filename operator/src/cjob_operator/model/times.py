"""RFC 3339 timestamps as stored in the status (UTC, millisecond precision)."""

from __future__ import annotations

import datetime
from typing import Any


def to_rfc3339(epoch: float) -> str:
    """The stored form of ``epoch``.

    >>> to_rfc3339(0.5)
    '1970-01-01T00:00:00.500Z'
    """
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def from_rfc3339(value: Any) -> float | None:
    """Epoch seconds of a stored timestamp; ``None`` for absent or unreadable values."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).replace("Z", "+00:00")
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def opt_rfc3339(epoch: float | None) -> str | None:
    return None if epoch is None else to_rfc3339(epoch)
