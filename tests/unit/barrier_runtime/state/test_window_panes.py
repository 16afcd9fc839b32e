"""Window panes: merging groups of any key type, snapshots split by key group, old tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from barrier_runtime.state import key_groups, keyed, window_panes
from barrier_runtime.state.window_panes import Panes, PanesCopy, Partials

MAX_P = 16


def _counts(*counts: int) -> Partials:
    return Partials(np.array(counts, np.int64))


def test_string_keys_merge_by_value_and_new_keys_are_appended() -> None:
    pane = Panes("count", np.dtype(np.int64)).pane(0)
    assert pane.merge(pa.array(["b", "a"]), _counts(1, 2)).tolist() == [0, 1]
    assert pane.merge(pa.array(["c", "b"]), _counts(5, 1)).tolist() == [2, 0]
    assert pane.keys is not None and pane.keys.to_pylist() == ["b", "a", "c"]
    assert pane.count.tolist() == [2, 2, 5]
    assert pane.key_order().tolist() == [1, 0, 2]  # a, b, c


def test_a_snapshot_restores_each_key_group_range_with_its_rows_only() -> None:
    panes = Panes("sum", np.dtype(np.int64))
    keys = pa.array(list(range(40)), pa.int64())
    ones = np.ones(40, np.int64)
    for start in (0, 60_000):
        where = panes.pane(start).merge(keys, Partials(ones, ones * start, ones, ones * 7))
        panes.pane(start).fired[where[:5]] = 1
    blob = PanesCopy.of(panes, MAX_P).encode()
    assert keyed.content_of(blob) == window_panes.CONTENT
    halves = [(0, MAX_P // 2 - 1), (MAX_P // 2, MAX_P - 1)]
    restored = []
    for lo, hi in halves:
        into = Panes("sum", np.dtype(np.int64))
        window_panes.decode([blob], (lo, hi), into)
        groups = key_groups.key_groups_of(into.pane(60_000).keys, MAX_P)  # type: ignore[arg-type]
        assert ((groups >= lo) & (groups <= hi)).all()
        restored.append(into)
    for start in (0, 60_000):
        got: dict[int, tuple[int, int]] = {}
        for into in restored:
            pane = into.pane(start)
            assert pane.keys is not None
            for k, s, f in zip(pane.keys.to_pylist(), pane.sum, pane.fired, strict=True):
                got[k] = (int(s), int(f))
        assert got == {k: (start, 1 if k < 5 else 0) for k in range(40)}


def test_a_table_of_float_sums_from_before_int64_loads_into_integer_panes() -> None:
    old = window_panes.schema(np.dtype(np.float64))
    table = pa.table(
        {
            "key_group": pa.array([0, 0], pa.int32()),
            "key": keyed.encode_column([1, 2]),
            "start": pa.array([0, 0], pa.int64()),
            "count": pa.array([3, 0], pa.int64()),
            "sum": pa.array([12.0, 0.0]),
            "min": pa.array([2.0, np.inf]),
            "max": pa.array([5.0, -np.inf]),
            "fired": pa.array([0, 0], pa.int64()),
        },
        schema=old,
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, old) as writer:
        writer.write_table(table)
    blob = sink.getvalue().to_pybytes()
    assert window_panes.snapshot_dtype([blob]) == np.dtype(np.float64)
    panes = Panes("min", np.dtype(np.int64))
    window_panes.decode([blob], (0, MAX_P - 1), panes)
    pane = panes.pane(0)
    assert pane.sum.tolist() == [12, 0] and pane.min[0] == 2 and pane.max[0] == 5
    assert pane.min[1] == np.iinfo(np.int64).max  # empty: the identity, not a cast of inf


def test_integer_panes_widen_to_floats_keeping_values_and_empty_extremes() -> None:
    panes = Panes("max", np.dtype(np.int64))
    pane = panes.pane(0)
    pane.merge(pa.array([1, 2]), Partials(*(np.array(a) for a in ([2, 0], [7, 0], [3, 0], [4, 0]))))
    panes.widen(np.dtype(np.float64))
    assert pane.sum.dtype == np.float64 and pane.max.tolist() == [4.0, -np.inf]
    pane.merge(pa.array([2]), Partials(*(np.array(a) for a in ([1], [0.5], [0.5], [0.5]))))
    assert pane.max.tolist() == [4.0, 0.5]
