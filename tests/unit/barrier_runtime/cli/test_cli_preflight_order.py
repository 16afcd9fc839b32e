"""What is wrong with the pipeline, the master or the checkpoints is said before Spark starts
(issue 27): a pipeline without a sink, an unreachable Spark master, and a store whose every
checkpoint is corrupt are each one sentence, found without building a SparkSession and
before anything about Spark is printed.
"""

from __future__ import annotations

import json
import socket

import pytest
from stored_checkpoints import OK_PIPELINE_JOB as JOB
from stored_checkpoints import commit_ok_pipeline_checkpoint

SINKLESS = """
from barrier_runtime.api import Dataflow
from barrier_runtime.testing import TestingSource
flow = Dataflow("p")
flow.source("in", TestingSource([{"x": 1}])).map("double", lambda r: r)
"""


@pytest.fixture
def sinkless(tmp_path) -> str:
    path = tmp_path / "sinkless.py"
    path.write_text(SINKLESS)
    return str(path)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_pipeline_without_a_sink(refused, sinkless, tmp_path) -> None:
    sentence = refused("run", sinkless, "--store", str(tmp_path / "cp")).sentence
    assert sentence == "dataflow 'p' has no sink: its results would go nowhere"


def test_a_pipeline_without_a_sink_in_json(refused, sinkless, tmp_path) -> None:
    result = refused("run", "--json", sinkless, "--store", str(tmp_path / "cp")).result
    events = [json.loads(line) for line in result.out.splitlines()]
    assert [e["event"] for e in events] == ["error"], events
    assert events[0]["message"] == "dataflow 'p' has no sink: its results would go nowhere"


def test_a_master_whose_host_does_not_resolve(refused, ok_pipeline, tmp_path) -> None:
    master = "spark://nohost.invalid:7077"
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--master", master, code=75
    ).sentence
    assert sentence == (
        f"cannot reach the Spark master {master} (the host name nohost.invalid does not "
        "resolve): check --master and that the master is running"
    )


def test_a_master_whose_port_is_closed(refused, ok_pipeline, tmp_path) -> None:
    port = closed_port()
    master = f"spark://127.0.0.1:{port}"
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--master", master, code=75
    ).sentence
    assert sentence == (
        f"cannot reach the Spark master {master} (connection to 127.0.0.1:{port} refused): "
        "check --master and that the master is running"
    )


def test_every_checkpoint_corrupt(refused, ok_pipeline, tmp_path) -> None:
    root = tmp_path / "cp"
    for cid in (1, 2):
        commit_ok_pipeline_checkpoint(root, cid)
        (root / JOB / f"checkpoints/chk-{cid:010d}/out/0.arrow").write_bytes(b"STATE")
    sentence = refused("run", ok_pipeline, "--store", str(root)).sentence
    assert sentence.startswith(f"no usable checkpoint in {root.as_uri()}, job {JOB}: checkpoint 2")
    assert "refusing to start from empty state" in sentence


def test_every_checkpoint_corrupt_but_a_fresh_start_allowed(
    cjob, spark_starts, ok_pipeline, tmp_path
) -> None:
    """Allowed: the pre-flight lets the job start (here: reaches the recorded build_session)."""
    root = tmp_path / "cp"
    commit_ok_pipeline_checkpoint(root, 1)
    (root / JOB / "checkpoints/chk-0000000001/out/0.arrow").write_bytes(b"STATE")
    result = cjob("run", ok_pipeline, "--store", str(root), "--allow-fresh-start")
    assert result.code == 2 and "this unit test does not start Spark" in result.err
    assert "starting fresh as explicitly allowed" in result.err
    assert spark_starts == ["local[2]"]


def test_the_newest_usable_checkpoint_is_chosen_before_spark(
    cjob, spark_starts, ok_pipeline, tmp_path, caplog
) -> None:
    """A corrupt newest checkpoint is skipped (announced) by the pre-flight, not by the driver."""
    root = tmp_path / "cp"
    commit_ok_pipeline_checkpoint(root, 1)
    commit_ok_pipeline_checkpoint(root, 2)
    (root / JOB / "checkpoints/chk-0000000002/out/0.arrow").write_bytes(b"STATE")
    result = cjob("run", ok_pipeline, "--store", str(root))
    assert result.code == 2 and "this unit test does not start Spark" in result.err
    assert spark_starts == ["local[2]"]
    skipped = [r.getMessage() for r in caplog.records if "skipped unusable" in r.getMessage()]
    assert len(skipped) == 1 and "restoring checkpoint 1" in skipped[0], skipped
