"""Mistakes through the real ``cjob`` executable: only the two ``cjob:`` lines reach stderr.

The in-process tests in ``tests/unit/barrier_runtime/cli`` cover every case;
these prove the same from outside, where a stray traceback or a log record
printed by a library would show.
"""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("flow = (\n", ["pipe.py has a syntax error at line 1", "fix it"]),
        ("import no_such_module_xyz\n", ["cannot import 'no_such_module_xyz' (line 1)"]),
        (
            "def build_flow(args):\n    raise ValueError('region?')\n",
            ["failed in build_flow([])", "ValueError: region? (line 2)"],
        ),
        ("flow = None\n", ["defines neither `flow` nor `build_flow(args)`"]),
    ],
)
def test_pipeline_mistakes(cjob, tmp_path, text, words) -> None:
    (tmp_path / "pipe.py").write_text(text)
    result = cjob("run", "--store", str(tmp_path / "cp"), str(tmp_path / "pipe.py"))
    result.assert_mistake(*words)
    assert result.out == "" and result.log.name.startswith("cjob-run-")


def test_a_missing_pipeline_file(cjob, tmp_path) -> None:
    cjob("run", "missing.py").assert_mistake(f"pipeline file {tmp_path / 'missing.py'} does not")


def test_a_bad_conf_option(cjob, ok_pipeline) -> None:
    cjob("run", "--conf", "novalue", ok_pipeline).assert_mistake("--conf expects KEY=VALUE")


def test_restore_from_an_unknown_checkpoint(cjob, ok_pipeline, tmp_path) -> None:
    result = cjob("run", "--store", str(tmp_path / "cp"), "--restore-from", "7", ok_pipeline)
    result.assert_mistake("checkpoint 7 is not in")
    assert "starting Spark" not in result.out


def test_checkpoints_of_a_mistyped_store(cjob, tmp_path) -> None:
    result = cjob("checkpoints", "list", "--store", str(tmp_path / "nope"), "--job", "a/b")
    result.assert_mistake(f"the store directory {tmp_path / 'nope'} does not exist")
    assert result.log.name.startswith("cjob-checkpoints-list-")


def test_driver_config_mistakes(cjob, tmp_path) -> None:
    cjob("driver", "--config", "absent.json").assert_mistake("cannot read the job configuration")
    (tmp_path / "job.json").write_text(json.dumps({"parallelism": "2x", "pipeline": {}}))
    cjob("driver", "--config", "job.json").assert_mistake("`parallelism`", "'2x', not an integer")


def test_verbose_shows_the_traceback(cjob, tmp_path) -> None:
    (tmp_path / "pipe.py").write_text("flow = (\n")
    result = cjob("--verbose", "run", str(tmp_path / "pipe.py"))
    assert result.code == 2 and "Traceback (most recent call last)" in result.err
    assert "cjob: error: pipeline file" in result.err and result.log.exists()
