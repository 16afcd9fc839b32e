"""Loading pipelines by reference, with one clear sentence for every mistake."""

from __future__ import annotations

import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.spark import pipeline, session, stage

FLOW = """
from barrier_runtime.testing import TestingSink, TestingSource
from barrier_runtime.api import Dataflow
flow = Dataflow("static")
flow.source("in", TestingSource([{"x": 1}])).sink("out", TestingSink())
"""

BUILD = """
from barrier_runtime.testing import TestingSink, TestingSource
from barrier_runtime.api import Dataflow
def build_flow(args):
    flow = Dataflow("built-" + "-".join(args))
    flow.source("in", TestingSource([{"x": 1}])).sink("out", TestingSink())
    return flow
"""


def _file(tmp_path, text, name="pipe.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_file_with_flow(tmp_path) -> None:
    flow = pipeline.load_flow(pipeline.PipelineRef.parse(_file(tmp_path, FLOW)))
    assert isinstance(flow, Dataflow) and flow.name == "static"


def test_a_file_with_build_flow_gets_its_arguments(tmp_path) -> None:
    ref = pipeline.PipelineRef.parse(_file(tmp_path, BUILD), ["a", "b"])
    assert pipeline.load_flow(ref).name == "built-a-b"


def test_a_module_reference() -> None:
    ref = pipeline.PipelineRef.parse("barrier_runtime.demo", ["--out", "/tmp/x", "--keys", "7"])
    assert ref.module == "barrier_runtime.demo"
    assert pipeline.load_flow(ref).name == "running-count"


def test_a_module_that_is_not_a_pipeline() -> None:
    ref = pipeline.PipelineRef.parse("barrier_runtime.testing")
    with pytest.raises(pipeline.NoDataflowError, match="defines neither `flow` nor"):
        pipeline.load_flow(ref)


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        ("raise RuntimeError('boom')", (), "failed to load: RuntimeError: boom"),
        ("flow = 42", (), "`flow` is int, not a Dataflow"),
        (FLOW, ("x",), "takes no arguments"),
        (
            "import argparse\ndef build_flow(a):\n    argparse.ArgumentParser().parse_args(a)",
            ("--nope",),
            "rejected its arguments",
        ),
    ],
)
def test_mistakes_are_one_sentence(tmp_path, capsys, text, args, message) -> None:
    ref = pipeline.PipelineRef.parse(_file(tmp_path, text), args)
    with pytest.raises(pipeline.InvalidPipelineError, match=message) as info:
        pipeline.load_flow(ref)
    assert "\n" not in str(info.value)


def test_missing_things() -> None:
    with pytest.raises(pipeline.InvalidPipelineError, match="does not exist"):
        pipeline.load_flow(pipeline.PipelineRef(file="/nonexistent/p.py"))
    with pytest.raises(pipeline.PipelineNotFoundError, match="cannot be found"):
        pipeline.load_flow(pipeline.PipelineRef(module="no_such_module_xyz"))
    with pytest.raises(pipeline.InvalidPipelineError, match="exactly one"):
        pipeline.PipelineRef()


@pytest.mark.parametrize(
    ("master", "slots"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[*]", None),
        ("local[4, 2]", 4),
        ("spark://h:7077", None),
        ("k8s://https://x", None),
    ],
)
def test_local_slots(master, slots) -> None:
    assert session.local_slots(master) == slots


def test_too_few_local_slots_for_the_barrier_stage() -> None:
    with pytest.raises(session.SparkUnavailableError, match=r"use local\[3\]"):
        session.build_session("local[2]", app_name="x", parallelism=3)


def test_spark_errors_are_summarised_to_the_workers_line() -> None:
    text = (
        "An error occurred while calling o1.collect.\n"
        ": org.apache.spark.SparkException: Job aborted\n"
        "barrier_runtime.spark.worker.WorkerFailedError: worker 2: InjectedFault in count#2: x\n"
        "\tat org.apache.spark.api.python...\n"
    )
    assert stage.summarize(RuntimeError(text)) == "worker 2: InjectedFault in count#2: x"
    assert stage.summarize(RuntimeError("An error occurred\n\tat x\nJob 3 cancelled")) == (
        "Job 3 cancelled"
    )
