"""Through the real ``cjob`` executable: what the pre-flight finds ends ``cjob run`` in
seconds, before anything about Spark is printed (issue 27).

An unreachable Spark master is a problem of the environment (exit 75, as an unreachable
store: a master that is down may come back); a pipeline without a sink and a store whose
every checkpoint is corrupt are mistakes (exit 2).
"""

from __future__ import annotations

import json
import socket

import pytest
from stored_checkpoints import OK_PIPELINE_JOB as JOB
from stored_checkpoints import commit_ok_pipeline_checkpoint

SPARK_START = 5.0
"""Spark's start alone takes longer than this here (~7 s): failing sooner proves it never ran."""
SINKLESS = """
from barrier_runtime.api import Dataflow
from barrier_runtime.testing import TestingSource
flow = Dataflow("p")
flow.source("in", TestingSource([{"x": 1}])).map("double", lambda r: r)
"""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_master_whose_host_does_not_resolve(cjob, ok_pipeline, tmp_path) -> None:
    master = "spark://nohost.invalid:7077"
    result = cjob("run", "--store", str(tmp_path / "cp"), "--master", master, ok_pipeline)
    assert result.assert_mistake(code=75) == (
        f"cannot reach the Spark master {master} (the host name nohost.invalid does not "
        "resolve): check --master and that the master is running"
    )
    assert "starting Spark" not in result.out and result.seconds < SPARK_START, result.seconds


def test_a_master_whose_port_is_closed(cjob, ok_pipeline, tmp_path) -> None:
    port = closed_port()
    master = f"spark://127.0.0.1:{port}"
    result = cjob("run", "--json", "--store", str(tmp_path / "cp"), "--master", master, ok_pipeline)
    sentence = result.assert_mistake(code=75)
    assert sentence == (
        f"cannot reach the Spark master {master} (connection to 127.0.0.1:{port} refused): "
        "check --master and that the master is running"
    )
    events = [json.loads(line) for line in result.out.splitlines()]
    assert [(e["event"], e["message"], e["exit_code"]) for e in events] == [("error", sentence, 75)]
    assert result.seconds < SPARK_START, result.seconds


def test_a_pipeline_without_a_sink(cjob, tmp_path) -> None:
    (tmp_path / "sinkless.py").write_text(SINKLESS)
    human = cjob("run", "--store", str(tmp_path / "cp"), "sinkless.py")
    human.assert_mistake("dataflow 'p' has no sink: its results would go nowhere")
    assert human.out == "", human.out
    as_json = cjob("run", "--json", "--store", str(tmp_path / "cp"), "sinkless.py")
    as_json.assert_mistake("dataflow 'p' has no sink")
    assert [json.loads(line)["event"] for line in as_json.out.splitlines()] == ["error"]


def test_every_checkpoint_corrupt(cjob, ok_pipeline, tmp_path) -> None:
    root = tmp_path / "cp"
    for cid in (1, 2):
        commit_ok_pipeline_checkpoint(root, cid)
        (root / JOB / f"checkpoints/chk-{cid:010d}/out/0.arrow").write_bytes(b"STATE")
    result = cjob("run", "--store", str(root), ok_pipeline)
    sentence = result.assert_mistake("no usable checkpoint in", "refusing to start from empty")
    assert "checkpoint 2 (state object checkpoints/chk-0000000002/out/0.arrow has sha256" in (
        sentence
    )
    assert "starting Spark" not in result.out and result.seconds < SPARK_START, result.seconds


@pytest.mark.slow
def test_a_port_that_is_not_a_spark_master(cjob, ok_pipeline, tmp_path) -> None:
    """The check passes (the port accepts connections), Spark gives up registering after a
    minute and stops its context: one sentence and exit 75, not an internal error."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        master = f"spark://127.0.0.1:{silent.getsockname()[1]}"
        result = cjob("run", "--store", str(tmp_path / "cp"), "--master", master, ok_pipeline)
    assert result.assert_mistake(code=75) == (
        f"Spark could not register with the master {master} and stopped: check --master and "
        "that the master is running (Spark's own output is in the log file)"
    )
