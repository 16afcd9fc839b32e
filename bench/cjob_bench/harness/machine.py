"""What the machine was doing: load averages, CPU count, CPU time of processes.

>>> len(loadavg()), cpu_count() >= 1
(3, True)
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import platform
import resource
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_count() -> int:
    return os.cpu_count() or 1


def describe() -> dict[str, Any]:
    return {
        "cpu_count": cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_at_start": loadavg(),
    }


def self_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time of a process and its reaped children (``None`` if it is gone)."""
    if pid is None:
        return None
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(x) for x in fields[11:15]) / _TICK


def jvm_pid() -> int | None:
    """The Spark JVM: the child process of this one named ``java``."""
    me = str(os.getpid())
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            if name == "java" and stat.rsplit(")", 1)[1].split()[1] == me:
                return int(entry.name)
    return None
