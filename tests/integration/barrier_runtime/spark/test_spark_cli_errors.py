"""``cjob run`` and ``cjob driver`` mistakes end in one sentence and exit code 2 (no Spark)."""

from __future__ import annotations

import json

import pytest

from barrier_runtime.cli import main


def _run(capsys, *argv):
    """The exit code and the ``cjob: error:`` line (the next line names the log file)."""
    code = main(list(argv))
    error, details = capsys.readouterr().err.strip().splitlines()
    assert details.startswith("cjob: details: ")
    return code, error


def test_run_names_a_missing_pipeline_file(capsys, tmp_path) -> None:
    code, err = _run(capsys, "run", str(tmp_path / "nope.py"))
    assert code == 2
    assert err == (
        f"cjob: error: pipeline file {tmp_path / 'nope.py'} does not exist: check the path, "
        "or name an importable module (my_jobs.orders)"
    )


def test_run_refuses_too_few_local_slots(capsys, tmp_path) -> None:
    pipeline = tmp_path / "p.py"
    pipeline.write_text(
        "from barrier_runtime.api import Dataflow\n"
        "from barrier_runtime.testing import TestingSink, TestingSource\n"
        "flow = Dataflow('p')\n"
        "flow.source('in', TestingSource([{'x': 1}])).sink('out', TestingSink())\n"
    )
    code, err = _run(
        capsys,
        "run",
        "-p",
        "3",
        "--master",
        "local[2]",
        "--store",
        str(tmp_path / "cp"),
        str(pipeline),
    )
    assert code == 2
    assert "--master local[2] has 2 task slot(s) but --parallelism is 3" in err and "\n" not in err


def test_run_reports_a_pipeline_that_exits_while_loading(capsys, tmp_path) -> None:
    pipeline = tmp_path / "p.py"
    pipeline.write_text("raise SystemExit('not a pipeline')\n")
    code, err = _run(capsys, "run", str(pipeline))
    assert code == 2
    assert err == (
        f"cjob: error: pipeline file {pipeline} failed to load: SystemExit: not a pipeline "
        "(line 1): fix the pipeline"
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (None, "cannot read the job configuration"),
        ({"parallelism": 2}, "lacks `pipeline`"),
        (
            {
                "pipeline": {"module": "barrier_runtime.demo"},
                "parallelism": 2,
                "storage": {"bucket": "b", "endpoint": "file:///tmp"},
                "control": {"port": 8080, "tokenEnv": "CJOB_TEST_NO_SUCH_TOKEN"},
            },
            "set the environment variable CJOB_TEST_NO_SUCH_TOKEN",
        ),
    ],
)
def test_driver_config_mistakes(capsys, tmp_path, doc, message) -> None:
    path = tmp_path / "job.json"
    if doc is not None:
        path.write_text(json.dumps(doc))
    code, err = _run(capsys, "driver", "--config", str(path))
    assert code == 2
    assert message in err and "\n" not in err
