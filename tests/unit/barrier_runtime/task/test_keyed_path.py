"""The per-record keyed path: keys hashed once per batch, state without hashing, snapshots deferred.

Routed parts carry their keys, so the keyed step in the same process calls the key
function once per record in all; Arrow batches become exactly the rows ``to_pylist`` gives.

Routing by a key function must split exactly as hashing each record's key
with ``key_group_for`` did; the keyed operator must keep ``on_error`` and the
"a generator raises before the state changes" rule; a snapshot is copied at
the barrier and serialised by the deferred payload.
"""

import threading

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime import task_failure
from barrier_runtime.api import Batch, steps
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.core import types
from barrier_runtime.state import key_groups, keyed
from barrier_runtime.task import operators, routing

KEYS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(0, 9),
    st.integers(2**63, 2**70),
    st.text(max_size=6),
    st.binary(max_size=6),
)


def _reference_split(rows, key_fn, parallelism):
    """Today's contract: every record's key through key_group_for, owner order, record order."""
    parts: dict[int, list] = {}
    for r in rows:
        kg = key_groups.key_group_for(key_fn(r), 128)
        parts.setdefault(key_groups.subtask_for_key_group(kg, parallelism, 128), []).append(r)
    return [(o, tuple(parts[o])) for o in sorted(parts)]


@settings(max_examples=80)
@given(st.lists(KEYS, max_size=50), st.integers(1, 5))
def test_routing_by_a_key_function_splits_like_hashing_each_key(keys, parallelism) -> None:
    rows = [{"k": k, "i": i} for i, k in enumerate(keys)]
    got = routing.split_by_owner(Batch.from_rows(rows), lambda r: r["k"], None, parallelism, 128)
    assert [(o, b.rows()) for o, b in got] == _reference_split(rows, lambda r: r["k"], parallelism)


@settings(max_examples=50)
@given(st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 9)), max_size=50))
def test_an_exact_arrow_batch_is_split_by_take_with_its_rows_kept(keys) -> None:
    arrow = pa.record_batch({"k": pa.array(keys, type=pa.int64()), "i": list(range(len(keys)))})
    batch = Batch.from_arrow(arrow)
    got = routing.split_by_owner(batch, lambda r: r["k"] * 3, None, 3, 128)
    assert [(o, b.rows()) for o, b in got] == _reference_split(
        arrow.to_pylist(), lambda r: r["k"] * 3, 3
    )
    for _, part in got:
        assert part.arrow_is_exact and part.to_arrow().to_pylist() == list(part.rows())


def test_rows_converted_to_arrow_are_not_split_as_arrow() -> None:
    rows = [{"k": i} if i % 2 else {"k": i, "x": 1} for i in range(20)]  # Arrow fills in x
    batch = Batch.from_rows(rows)
    batch.to_arrow()
    assert not batch.arrow_is_exact
    got = routing.split_by_owner(batch, lambda r: r["k"], None, 2, 128)
    assert sorted((r for _, part in got for r in part.rows()), key=lambda r: r["k"]) == rows


def test_a_failing_key_function_or_key_type_names_the_record() -> None:
    rows = [{"k": 1}, {"k": 2.5}, {"k": 3}]
    with pytest.raises(task_failure.UserFunctionError) as caught:
        routing.split_by_owner(Batch.from_rows(rows), lambda r: r["k"], None, 2, 128, "by")
    assert caught.value.record_text == "{'k': 2.5}" and isinstance(
        caught.value.__cause__, TypeError
    )
    with pytest.raises(task_failure.UserFunctionError) as caught:
        routing.split_by_owner(
            Batch.from_rows(rows), lambda r: r["k"] // (r["k"] - 3), None, 2, 128
        )
    # the first record that fails, with its own error (the 2.5 key is a float), as record by record
    assert caught.value.record_text == "{'k': 2.5}" and isinstance(
        caught.value.__cause__, TypeError
    )


def test_the_hash_cache_never_answers_for_another_type() -> None:
    key_groups.key_groups_for_keys([1, "1", b"1"], 128)  # all three cached now
    with pytest.raises(TypeError, match="keys must be str, int or bytes"):
        key_groups.key_groups_for_keys(["1", True], 128)
    with pytest.raises(TypeError, match="keys must be str, int or bytes"):
        key_groups.key_groups_for_keys(["1", 1.0], 128)


@given(st.lists(st.one_of(KEYS, st.sampled_from(["a", b"a", 1])), max_size=40))
def test_key_groups_of_a_key_list_equal_key_group_for_each(keys) -> None:
    got = key_groups.key_groups_for_keys(keys, 128).tolist()
    assert got == [key_groups.key_group_for(k, 128) for k in keys]


def _keyed(fn, reject=None, connect=False):
    out: list[Batch] = []
    by_k = steps.Input(types.StepId("by"), steps.Partitioning.KEYED, lambda r: r["k"])
    step: steps.StatefulStep | steps.ConnectStep
    if connect:
        by_j = steps.Input(types.StepId("by2"), steps.Partitioning.KEYED, lambda r: r["j"])
        step = steps.ConnectStep(types.StepId("count"), (by_k, by_j), fn)
    else:
        step = steps.StatefulStep(types.StepId("count"), by_k, fn)
    return operators.keyed.KeyedOperator(step, out.append, (0, 127), 128, reject), out


def _count(state, r):
    n = (state or 0) + 1
    return n, [{"k": r["k"], "n": n}]


def test_stateful_map_counts_and_none_deletes() -> None:
    op, out = _keyed(_count)
    op.process(Batch.from_rows([{"k": "a"}, {"k": 1}, {"k": "a"}]), 0)
    assert [r["n"] for r in out[0].rows()] == [1, 1, 2]
    op2, _ = _keyed(lambda s, r: (None, ()))
    op2.state.put("a", 1)
    op2.process(Batch.from_rows([{"k": "a"}]), 0)
    assert len(op2.state) == 0


def test_connect_passes_the_side_and_keys_each_side_by_its_function() -> None:
    op, out = _keyed(lambda s, side, r: ((s or ()) + (side,), (r,)), connect=True)
    op.process(Batch.from_rows([{"k": "x"}]), 0)
    op.process(Batch.from_rows([{"j": "x"}]), 1)
    assert op.state.get("x") == (0, 1) and len(out) == 2


def test_a_generator_that_raises_leaves_the_state_and_rejects_the_record() -> None:
    def gen(state, r):
        def outputs():
            yield {"ok": 1}
            if r["bad"]:
                raise ValueError("boom")

        return (state or 0) + 1, outputs()

    rejected: list = []
    op, out = _keyed(gen, reject=lambda r, exc: rejected.append((r, type(exc))))
    op.process(Batch.from_rows([{"k": "a", "bad": 0}, {"k": "a", "bad": 1}]), 0)
    assert op.state.get("a") == 1
    assert rejected == [({"k": "a", "bad": 1}, ValueError)]
    assert out[0].rows() == ({"ok": 1},)
    strict, _ = _keyed(gen)
    with pytest.raises(task_failure.UserFunctionError):
        strict.process(Batch.from_rows([{"k": "a", "bad": 1}]), 0)
    assert strict.state.get("a") is None


def test_the_snapshot_is_copied_at_the_barrier_and_serialised_by_the_upload_thread() -> None:
    def collect(state, r):
        state = state if state is not None else []
        state.append(r["v"])  # mutates the value in place
        return state, ()

    op, _ = _keyed(collect)
    op.process(Batch.from_rows([{"k": "a", "v": 1}, {"k": 7, "v": 2}]), 0)
    builder = operators.SnapshotBuilder(types.CheckpointId(1), 0)
    op.snapshot(builder)
    [blob] = builder.blobs
    assert callable(blob.payload)  # the task thread returned without serialising
    op.process(Batch.from_rows([{"k": "a", "v": 3}, {"k": "b", "v": 4}]), 0)
    uploaded: list[bytes] = []
    upload = threading.Thread(target=lambda: uploaded.append(blob.data))
    upload.start()
    upload.join()
    fresh = keyed.KeyedState((0, 127), 128)
    fresh.restore(uploaded)
    assert dict(fresh.items()) == {"a": [1], 7: [2]}
    assert op.state.get("a") == [1, 3]


def test_immutable_values_are_shared_not_encoded_at_the_barrier() -> None:
    state = keyed.KeyedState((0, 127), 128)
    for i in range(100):
        state.put(i, i * 2)
    state.put("s", "text")
    copy = state.snapshot_copy("count")
    assert copy.encoded == {} and copy.shared == dict(state.items())
    assert copy.shared is not state.values
    state.put(1, 99)
    fresh = keyed.KeyedState((0, 127), 128)
    fresh.restore([copy.encode()])
    assert fresh.get(1) == 2 and fresh.get("s") == "text"


def test_an_unencodable_value_fails_at_the_barrier_naming_the_step() -> None:
    op, _ = _keyed(lambda s, r: (object(), ()))
    op.process(Batch.from_rows([{"k": "a"}]), 0)
    with pytest.raises(keyed.UnencodableStateError, match=r"step 'count'.*key 'a'"):
        op.snapshot(operators.SnapshotBuilder(types.CheckpointId(1), 0))


def test_routed_parts_carry_their_keys_and_the_keyed_step_does_not_key_them_again() -> None:
    calls: list[int] = []

    def key_fn(r):
        calls.append(r["k"])
        return r["k"]

    by_k = steps.Input(types.StepId("by"), steps.Partitioning.KEYED, key_fn)
    out: list[Batch] = []
    op = operators.keyed.KeyedOperator(
        steps.StatefulStep(types.StepId("count"), by_k, _count), out.append, (0, 127), 128
    )
    arrow = pa.record_batch({"k": [i % 7 for i in range(40)]})
    parts = routing.split_by_owner(Batch.from_arrow(arrow), key_fn, None, 2, 128)
    assert len(parts) == 2
    for _, part in parts:
        assert list(part.keys_for(key_fn)) == [r["k"] for r in part.rows()]
        assert part.keys_for(lambda r: r["k"]) is None  # another function: no keys
        op.process(part, 0)
    assert len(calls) == 40  # once per record, in routing
    assert {k: op.state.get(k) for k in range(7)} == {k: len(range(k, 40, 7)) for k in range(7)}


def test_a_key_function_that_raises_in_the_keyed_step_rejects_only_its_record() -> None:
    rejected: list = []
    op, out = _keyed(_count, reject=lambda r, exc: rejected.append((r, type(exc))))
    op.process(Batch.from_rows([{"k": "a"}, {"x": 1}, {"k": "a"}]), 0)
    assert rejected == [({"x": 1}, KeyError)]
    assert [r["n"] for r in out[0].rows()] == [1, 2]
    strict, strict_out = _keyed(_count)
    with pytest.raises(task_failure.UserFunctionError) as caught:
        strict.process(Batch.from_rows([{"k": "b"}, {"x": 1}]), 0)
    assert caught.value.record_text == "{'x': 1}" and strict.state.get("b") == 1
    assert strict_out == []


@pytest.mark.parametrize(
    "arrow",
    [
        pa.record_batch({"k": [1, None, 3], "s": ["a", None, "c"], "f": [1.5, 2.0, None]}),
        pa.record_batch({"l": [[1, 2], None, []], "m": [{"x": 1}, {"x": None}, None]}),
        pa.record_batch({"only": pa.array([], pa.int64())}),
        pa.record_batch([pa.array([1, 2]), pa.array([3, 4])], names=["dup", "dup"]),
        pa.record_batch({f"c{i}": [i, i + 1] for i in range(70)}),
        pa.RecordBatch.from_pydict({}),
    ],
)
def test_arrow_batches_become_exactly_the_rows_to_pylist_gives(arrow) -> None:
    assert batch_mod.arrow_rows(arrow) == arrow.to_pylist()
    assert Batch.from_arrow(arrow).rows() == tuple(arrow.to_pylist())
    for got, want in zip(batch_mod.arrow_rows(arrow), arrow.to_pylist(), strict=True):
        assert list(got) == list(want)  # the same key order


@settings(max_examples=40)
@given(
    st.one_of(
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40),
        st.lists(st.text(max_size=4), max_size=40),
        st.lists(st.binary(max_size=4), max_size=40),
    )
)
def test_a_column_lookup_key_function_routes_by_the_column_without_building_rows(keys) -> None:
    arrow = pa.record_batch({"k": keys, "i": list(range(len(keys)))})
    got = routing.split_by_owner(Batch.from_arrow(arrow), lambda r: r["k"], None, 3, 128)
    assert all(not part.holds_rows for _, part in got)  # the function was not called per row
    assert [(o, b.rows()) for o, b in got] == _reference_split(
        arrow.to_pylist(), lambda r: r["k"], 3
    )


def test_only_a_plain_lookup_of_plain_keys_is_routed_by_the_column() -> None:
    assert routing.column_looked_up(lambda r: r["k"]) == "k"
    offset = 1
    for not_a_lookup in (lambda r: r["k"] + offset, lambda r: r.get("k"), lambda *r: r[0], len):
        assert routing.column_looked_up(not_a_lookup) is None
    with_null = pa.record_batch({"k": [1, None, 3]})
    with pytest.raises(task_failure.UserFunctionError):  # None is no key, as record by record
        routing.split_by_owner(Batch.from_arrow(with_null), lambda r: r["k"], None, 2, 128)
    floats = pa.record_batch({"k": [1.0, 2.0]})
    with pytest.raises(task_failure.UserFunctionError):
        routing.split_by_owner(Batch.from_arrow(floats), lambda r: r["k"], None, 2, 128)
    missing = pa.record_batch({"j": [1, 2]})
    with pytest.raises(task_failure.UserFunctionError):
        routing.split_by_owner(Batch.from_arrow(missing), lambda r: r["k"], None, 2, 128)
