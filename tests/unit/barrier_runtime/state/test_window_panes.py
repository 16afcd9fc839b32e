"""Window panes: merging groups of any key type, several value columns, snapshots split by
key group, old tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from barrier_runtime.state import key_groups, keyed, pane_snapshots, value_columns, window_panes
from barrier_runtime.state.pane_snapshots import PanesCopy
from barrier_runtime.state.window_panes import Panes, Partials, ValuePartials

MAX_P = 16
INT = np.dtype(np.int64)


def _values(count, total, low, high) -> ValuePartials:  # type: ignore[no-untyped-def]
    return ValuePartials(*(np.array(a) for a in (count, total, low, high)))


def _of_v(count, total, low, high) -> Partials:  # type: ignore[no-untyped-def]
    """Partials of one value column ``v`` (every record has a value)."""
    return Partials(np.array(count), {"v": _values(count, total, low, high)})


def _counts(*counts: int) -> Partials:
    return Partials(np.array(counts, np.int64))


def test_string_keys_merge_by_value_and_new_keys_are_appended() -> None:
    pane = Panes({}).pane(0)
    assert pane.merge(pa.array(["b", "a"]), _counts(1, 2)).tolist() == [0, 1]
    assert pane.merge(pa.array(["c", "b"]), _counts(5, 1)).tolist() == [2, 0]
    assert pane.keys is not None and pane.keys.to_pylist() == ["b", "a", "c"]
    assert pane.count.tolist() == [2, 2, 5]
    assert pane.key_order().tolist() == [1, 0, 2]  # a, b, c


def test_a_snapshot_restores_each_key_group_range_with_its_rows_only() -> None:
    panes = Panes({"v": INT})
    keys = pa.array(list(range(40)), pa.int64())
    ones = np.ones(40, np.int64)
    for start in (0, 60_000):
        partials = Partials(ones, {"v": ValuePartials(ones, ones * start, ones, ones * 7)})
        where = panes.pane(start).merge(keys, partials)
        panes.pane(start).fired[where[:5]] = 1
    blob = PanesCopy.of(panes, MAX_P).encode()
    assert keyed.content_of(blob) == window_panes.CONTENT
    halves = [(0, MAX_P // 2 - 1), (MAX_P // 2, MAX_P - 1)]
    restored = []
    for lo, hi in halves:
        into = Panes({"v": INT})
        pane_snapshots.decode([blob], (lo, hi), into)
        groups = key_groups.key_groups_of(into.pane(60_000).keys, MAX_P)  # type: ignore[arg-type]
        assert ((groups >= lo) & (groups <= hi)).all()
        restored.append(into)
    for start in (0, 60_000):
        got: dict[int, tuple[int, int]] = {}
        for into in restored:
            pane = into.pane(start)
            assert pane.keys is not None
            sums = pane.values["v"].sum
            for k, s, f in zip(pane.keys.to_pylist(), sums, pane.fired, strict=True):
                got[k] = (int(s), int(f))
        assert got == {k: (start, 1 if k < 5 else 0) for k in range(40)}


def test_a_table_of_float_sums_from_before_int64_loads_into_integer_panes() -> None:
    old = pa.schema(
        [
            ("key_group", pa.int32()),
            ("key", pa.binary()),
            ("start", pa.int64()),
            ("count", pa.int64()),
            ("sum", pa.float64()),
            ("min", pa.float64()),
            ("max", pa.float64()),
            ("fired", pa.int64()),
        ],
        metadata={keyed.FORMAT_KEY: keyed.FORMAT, keyed.CONTENT_KEY: window_panes.CONTENT},
    )
    table = pa.table(
        {
            "key_group": pa.array([0, 0], pa.int32()),
            "key": value_columns.encode_column([1, 2]),
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
    assert pane_snapshots.snapshot_dtypes([blob], ["qty"], "qty") == {"qty": np.dtype(np.float64)}
    panes = Panes({"qty": INT})
    pane_snapshots.decode([blob], (0, MAX_P - 1), panes, legacy="qty")
    pane = panes.pane(0)
    v = pane.values["qty"]
    assert v.sum.tolist() == [12, 0] and v.min[0] == 2 and v.max[0] == 5
    assert v.count.tolist() == [3, 0] and pane.count.tolist() == [3, 0]
    assert v.min[1] == np.iinfo(np.int64).max  # empty: the identity, not a cast of inf


def test_integer_panes_widen_to_floats_keeping_values_and_empty_extremes() -> None:
    panes = Panes({"v": INT})
    pane = panes.pane(0)
    pane.merge(pa.array([1, 2]), _of_v([2, 0], [7, 0], [3, 0], [4, 0]))
    panes.widen("v", np.dtype(np.float64))
    v = pane.values["v"]
    assert v.sum.dtype == np.float64 and v.max.tolist() == [4.0, -np.inf]
    pane.merge(pa.array([2]), _of_v([1], [0.5], [0.5], [0.5]))
    assert v.max.tolist() == [4.0, 0.5]


def test_several_value_columns_keep_their_own_types_and_snapshot_together() -> None:
    """Each column its dtype; one table holds them all and restores per key group range."""
    panes = Panes({"qty": INT, "price": np.dtype(np.float64)})
    keys = pa.array(["a", "b", "c"])
    partials = Partials(
        np.array([3, 1, 2]),
        {
            "qty": _values([3, 1, 0], [9, 4, 0], [1, 4, 2**62], [5, 4, -(2**62)]),
            "price": _values([2, 1, 2], [1.5, 2.0, 0.25], [0.5, 2.0, 0.0], [1.0, 2.0, 0.25]),
        },
    )
    panes.pane(0).merge(keys, partials)
    panes.pane(0).fired[1] = 1
    blob = PanesCopy.of(panes, MAX_P).encode()
    assert pane_snapshots.snapshot_dtypes([blob], ["price", "qty"], None) == {
        "price": np.dtype(np.float64),
        "qty": INT,
    }
    into = Panes({"qty": INT, "price": np.dtype(np.float64)})
    pane_snapshots.decode([blob], (0, MAX_P - 1), into)
    pane = into.pane(0)
    assert pane.keys is not None
    got = {
        k: (int(n), int(f), int(q), float(p))
        for k, n, f, q, p in zip(
            pane.keys.to_pylist(),
            pane.count,
            pane.fired,
            pane.values["qty"].sum,
            pane.values["price"].sum,
            strict=True,
        )
    }
    assert got == {"a": (3, 0, 9, 1.5), "b": (1, 1, 4, 2.0), "c": (2, 0, 0, 0.25)}
    assert pane.values["qty"].sum.dtype == np.int64


def _contents(panes: Panes) -> dict[int, dict[object, tuple[int, ...]]]:
    out: dict[int, dict[object, tuple[int, ...]]] = {}
    for start, pane in panes.items():
        if pane.keys is None or not len(pane):
            continue
        v = pane.values["v"]
        rows = zip(
            pane.keys.to_pylist(),
            pane.count.tolist(),
            pane.fired.tolist(),
            v.sum.tolist(),
            v.min.tolist(),
            v.max.tolist(),
            strict=True,
        )
        out[start] = {key: tuple(rest) for key, *rest in rows}
    return out


def _merge_random(panes: Panes, rng: np.random.Generator, start: int, n: int) -> None:
    keys = np.unique(rng.integers(0, 50, n))
    ones = np.ones(len(keys), np.int64)
    values = rng.integers(-100, 100, len(keys))
    partials = Partials(ones, {"v": ValuePartials(ones, values, values, values)})
    panes.pane(start).merge(pa.array(keys, pa.int64()), partials)


def test_a_base_and_its_deltas_restore_the_panes_exactly() -> None:
    rng = np.random.default_rng(3)
    live = Panes({"v": INT}, (0, MAX_P - 1), MAX_P)
    state = pane_snapshots.PanesState(live)
    state.track_changes()
    blobs = [state.snapshot_copy("w").encode()]
    state.delta_copy("w")  # the base holds everything so far
    for round_ in range(30):
        for _ in range(int(rng.integers(0, 4))):
            _merge_random(live, rng, int(rng.integers(0, 6)) * 10, int(rng.integers(1, 30)))
        pane = live.get(int(rng.integers(0, 6)) * 10)
        if pane is not None and len(pane):
            pane.fire(np.flatnonzero(rng.random(len(pane)) < 0.3))
        if round_ % 7 == 6:
            live.drop(int(rng.integers(0, 6)) * 10)
        delta = state.delta_copy("w")
        assert delta.delta
        blobs.append(delta.encode())
        restored = Panes({"v": INT}, (0, MAX_P - 1), MAX_P)
        pane_snapshots.decode(blobs, (0, MAX_P - 1), restored)
        assert _contents(restored) == _contents(live)


def test_a_dropped_window_goes_only_for_the_key_groups_of_the_subtask_that_dropped_it() -> None:
    halves = [(0, MAX_P // 2 - 1), (MAX_P // 2, MAX_P - 1)]
    keys = np.arange(40)
    groups = key_groups.key_groups_of(pa.array(keys, pa.int64()), MAX_P)
    subtasks, blobs = [], []
    for lo, hi in halves:
        mine = keys[(groups >= lo) & (groups <= hi)]
        panes = Panes({"v": INT}, (lo, hi), MAX_P)
        ones = np.ones(len(mine), np.int64)
        partials = Partials(ones, {"v": ValuePartials(ones, ones, ones, ones)})
        panes.pane(0).merge(pa.array(mine, pa.int64()), partials)
        state = pane_snapshots.PanesState(panes)
        state.track_changes()
        blobs.append(state.snapshot_copy("w").encode())
        state.delta_copy("w")
        subtasks.append((panes, state))
    first, first_state = subtasks[0]
    first.drop(0)  # only the first subtask's watermark passed the window's end
    blobs.append(first_state.delta_copy("w").encode())
    blobs.append(subtasks[1][1].delta_copy("w").encode())
    everything = Panes({"v": INT}, (0, MAX_P - 1), MAX_P)
    pane_snapshots.decode(blobs, (0, MAX_P - 1), everything)
    assert _contents(everything) == _contents(subtasks[1][0])
