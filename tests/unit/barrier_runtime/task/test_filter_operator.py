"""``filter``: records kept unchanged, an Arrow batch kept as Arrow, each record judged once.

A filtered batch read as Arrow must leave with its Arrow form filtered (so a
keyed edge and a wire can use it without converting rows back), and that form
must hold exactly the kept rows. A predicate that raises rejects that one
record (or fails the step, naming it) and is never called twice for a record.
"""

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime import task_failure
from barrier_runtime.api import Batch, steps
from barrier_runtime.channels import codec
from barrier_runtime.core import types
from barrier_runtime.task import operators


def _operator(predicate, *, reject=None):
    out: list[Batch] = []
    step = steps.FilterStep(
        types.StepId("keep"),
        steps.Input(types.StepId("src"), steps.Partitioning.FORWARD),
        predicate,
    )
    return operators.stateless.FilterOperator(step, out.append, reject), out


@settings(max_examples=60)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40))
def test_an_arrow_batch_leaves_as_the_same_rows_filtered_in_arrow(values) -> None:
    arrow = pa.record_batch({"v": pa.array(values, pa.int64()), "i": list(range(len(values)))})
    op, out = _operator(lambda r: r["v"] % 3 == 0)
    op.process(Batch.from_arrow(arrow), 0)
    expected = [r for r in arrow.to_pylist() if r["v"] % 3 == 0]
    assert [r for b in out for r in b.rows()] == expected
    for batch in out:
        assert batch.arrow_is_exact
        assert batch.to_arrow().to_pylist() == list(batch.rows())
        encoding, _ = codec.encode_batch(batch)
        assert encoding is codec.DataEncoding.ARROW


def test_a_batch_kept_whole_is_passed_on_as_is_and_an_empty_result_emits_nothing() -> None:
    batch = Batch.from_arrow(pa.record_batch({"v": [1, 2, 3]}))
    op, out = _operator(lambda r: r["v"] > 0)
    op.process(batch, 0)
    op.process(batch, 0)
    none, nothing = _operator(lambda r: False)
    none.process(batch, 0)
    assert out == [batch, batch]
    assert nothing == []


def test_rows_not_born_as_arrow_stay_rows_unchanged() -> None:
    rows = [{"k": "a", "v": (1, 2)}, {"k": "b", "v": (3, 4)}, {"k": "c", "v": (5, 6)}]
    op, out = _operator(lambda r: r["k"] != "b")
    op.process(Batch.from_rows(rows), 0)
    (batch,) = out
    assert batch.rows() == (rows[0], rows[2])
    assert batch.rows()[0] is rows[0]
    assert not batch.arrow_is_exact


def test_truthy_results_count_as_true() -> None:
    op, out = _operator(lambda r: r["tag"])
    op.process(Batch.from_rows([{"tag": "x"}, {"tag": ""}, {"tag": [0]}, {"tag": None}]), 0)
    assert [r["tag"] for r in out[0].rows()] == ["x", [0]]


def test_a_raising_predicate_rejects_that_record_and_judges_each_record_once() -> None:
    calls: list[int] = []
    rejected: list[tuple[object, str]] = []

    def predicate(record):
        calls.append(record["i"])
        return 10 // (record["i"] % 4) > 3  # raises for every 4th record

    op, out = _operator(predicate, reject=lambda r, exc: rejected.append((r, type(exc).__name__)))
    arrow = pa.record_batch({"i": list(range(10))})
    op.process(Batch.from_arrow(arrow), 0)
    assert calls == list(range(10))
    assert rejected == [({"i": i}, "ZeroDivisionError") for i in (0, 4, 8)]
    assert [r["i"] for r in out[0].rows()] == [1, 2, 5, 6, 9]
    assert out[0].to_arrow().column("i").to_pylist() == [1, 2, 5, 6, 9]


def test_without_on_error_the_step_fails_naming_the_record() -> None:
    op, out = _operator(lambda r: 1 / r["d"] > 0)
    with pytest.raises(task_failure.UserFunctionError) as failure:
        op.process(Batch.from_rows([{"d": 1}, {"d": 0}, {"d": 2}]), 0)
    assert failure.value.step_id == "keep"
    assert "'d': 0" in str(failure.value)
    assert out == []
