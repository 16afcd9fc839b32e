"""The open-session table: dead rows and key chunks are compacted away without losing a live one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from barrier_runtime.state import open_sessions, session_windows


def rows(starts: list[int]) -> dict[str, np.ndarray]:
    s = np.array(starts, np.int64)
    return {"start": s, "end": s + 10, "count": np.ones(len(s), np.int64), "fired": s % 3}


def test_many_chunks_and_dead_rows_compact_to_the_live_sessions() -> None:
    table = open_sessions.OpenSessions(session_windows.empty([], {}))
    want: dict[str, tuple[int, int]] = {}
    positions: dict[str, int] = {}
    for chunk in range(100):  # more chunks than are kept apart
        starts = list(range(chunk * 30, chunk * 30 + 30))
        keys = [f"k{s}" for s in starts]
        at = table.append(pa.array(keys), rows(starts))
        positions.update(zip(keys, at.tolist(), strict=True))
        want.update((k, (s, s % 3)) for k, s in zip(keys, starts, strict=True))
    assert table.size == len(table) == 3_000
    doomed = [k for k in want if int(k[1:]) % 3 != 0]
    table.kill(np.array([positions[k] for k in doomed]))
    for k in doomed:
        del want[k]
    assert table.compact()
    assert table.size == len(table) == len(want) == 1_000
    keys = table.keys().to_pylist()
    got = {
        k: (int(s), int(f))
        for k, s, f in zip(keys, table.column("start"), table.column("fired"), strict=True)
    }
    assert got == want
    assert table.find(pa.array(["k3", "k4", "k2997"])).tolist() == [
        keys.index("k3"),
        keys.index("k2997"),
    ]


def test_few_dead_rows_stay_until_they_outnumber_the_live_ones() -> None:
    table = open_sessions.OpenSessions(session_windows.empty([], {}))
    at = table.append(pa.array(["a", "b", "c"]), rows([0, 1, 2]))
    table.kill(at[:2])
    assert not table.compact() and table.size == 3 and len(table) == 1
    assert table.find(pa.array(["a", "c"])).tolist() == [2]
    assert table.compact(force=True) and table.keys().to_pylist() == ["c"]
