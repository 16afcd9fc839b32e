"""Kubernetes-style durations (``"30s"``, ``"5m"``, ``"1h30m"``, ``"250ms"``) in seconds.

>>> parse_duration("1m30s")
90.0
>>> parse_duration("250ms")
0.25
>>> parse_duration(45)
45.0
>>> format_duration(90.0)
'1m30s'
"""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class DurationError(ValueError):
    """A duration string that cannot be understood."""


def parse_duration(value: str | int | float) -> float:
    """Seconds in ``value``: a number of seconds or a Go-style duration string."""
    if isinstance(value, bool):
        raise DurationError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if not text:
        raise DurationError("empty duration")
    try:
        return float(text)
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise DurationError(
            f"invalid duration {value!r}: use a number with a unit, e.g. '30s', '5m', '1h30m'"
        )
    return total


def format_duration(seconds: float) -> str:
    """A compact human form of ``seconds`` (the inverse of :func:`parse_duration`)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs else "",
    ]
    return "".join(parts) or "0s"
