"""The dataflow API: building, and clear errors for graphs that cannot run."""

import pyarrow as pa
import pytest

from barrier_runtime.api import Dataflow, InvalidDataflowError, steps
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.testing import TestingSink, TestingSource


def _src() -> TestingSource:
    return TestingSource([{"k": "a", "v": 1}])


def test_every_operator_is_available_and_ids_are_kept_in_order() -> None:
    flow = Dataflow("all-ops")
    a = flow.source("a", _src())
    b = flow.source("b", _src())
    m = flow.merge("merged", a.map("ma", lambda r: r), b.filter("fb", lambda r: True))
    fm = m.flat_map("fm", lambda r: [r, r])
    mb = fm.map_batches("mb", lambda batch: batch.filter(pa.compute.greater(batch["v"], 0)))
    keyed = mb.key_by("by-k", "k")
    reduced = keyed.reduce("red", lambda acc, r: {"k": r["k"], "v": acc["v"] + r["v"]})
    agg = keyed.aggregate(
        "agg", lambda: 0, lambda acc, r: acc + r["v"], lambda acc, r: {"k": r["k"], "v": acc}
    )
    joined = reduced.key_by("rk", "k").connect(
        "join", agg.key_by("ak", "k"), lambda s, side, r: (s, [r])
    )
    joined.sink("out", TestingSink())
    flow.validate()
    assert flow.step_ids[:2] == ("a", "b")
    assert isinstance(flow.step("join"), steps.ConnectStep)
    assert len(flow.step_ids) == 14


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda f: f.source("x", _src()).map("x", lambda r: r), "duplicate step id 'x'"),
        (lambda f: f.source("x", _src()), "has no sink"),
        (lambda f: f.source("", _src()), "non-empty strings"),
        (lambda f: f.source("a/b", _src()), "may not contain '/'"),
        (lambda f: f.source("x", object()), "is not a barrier_runtime Source"),
        (lambda f: f.merge("m", f.source("x", _src())), "at least two streams"),
    ],
)
def test_invalid_graphs_get_one_clear_message(build, message) -> None:
    flow = Dataflow("bad")
    with pytest.raises(InvalidDataflowError, match=message):
        build(flow)
        flow.validate()


def test_dangling_stream_is_named() -> None:
    flow = Dataflow("dangling")
    src = flow.source("src", _src())
    src.sink("out", TestingSink())
    src.map("forgotten", lambda r: r)
    with pytest.raises(InvalidDataflowError, match="'forgotten' is never used"):
        flow.validate()


def test_a_flow_without_source_is_rejected() -> None:
    with pytest.raises(InvalidDataflowError, match="has no source"):
        Dataflow("empty").validate()


def test_sink_has_no_output_to_consume() -> None:
    flow = Dataflow("sinkout")
    out = flow.source("src", _src())
    out.sink("out", TestingSink())
    from barrier_runtime.api.dataflow import Stream

    with pytest.raises(InvalidDataflowError, match="has no output"):
        Stream(flow, flow.step_ids[-1]).map("after", lambda r: r)


def test_planning_chains_forward_steps_and_splits_at_keyed_and_merge_edges() -> None:
    flow = Dataflow("plan")
    a = flow.source("a", _src()).map("a1", lambda r: r)
    b = flow.source("b", _src())
    merged = flow.merge("m", a, b)
    merged.key_by("k", "k").reduce("sum", lambda x, y: x).sink("out", TestingSink())
    plan = plan_mod.plan(flow, 3)
    assert [(t.task_id, t.steps) for t in plan.tasks] == [
        ("a", ("a", "a1")),
        ("b", ("b",)),
        ("m", ("m", "k")),
        ("sum", ("sum", "out")),
    ]
    sum_task = plan.task(plan.task_of["sum"])
    assert len(sum_task.channels(0, 3)) == 3  # keyed edge: one channel per upstream subtask
    assert len(plan.task(plan.task_of["m"]).channels(1, 3)) == 2  # two forward inputs
    assert len(plan.task_keys()) == 12


def test_parallelism_must_fit_max_parallelism() -> None:
    flow = Dataflow("p", max_parallelism=4)
    flow.source("s", _src()).sink("o", TestingSink())
    with pytest.raises(InvalidDataflowError, match="between 1 and max_parallelism"):
        plan_mod.plan(flow, 5)
