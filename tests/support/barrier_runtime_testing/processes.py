"""For tests of the servers the runtime starts (:mod:`barrier_runtime.processes`): whether a
process they started still runs, to prove that stopping one leaves nothing behind."""

from __future__ import annotations

import pathlib


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting its reaper counts as dead)."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")
