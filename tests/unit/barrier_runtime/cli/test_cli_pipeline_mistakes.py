"""``cjob run`` with a missing or broken pipeline: one sentence naming the file (and line), exit 2.

Every case fails before Spark starts; the traceback is in the log file only.
"""

from __future__ import annotations

import pytest

BUILD_RAISES = (
    "def build_flow(args):\n    x = 1\n    raise KeyError('no such region: ' + ','.join(args))\n"
)


@pytest.mark.parametrize(
    ("name", "text", "args", "words"),
    [
        pytest.param(
            "syntax.py",
            "x = 1\ndef f(:\n",
            (),
            ["syntax.py", "syntax error at line 2", "fix it"],
            id="syntax-error",
        ),
        pytest.param(
            "imports.py",
            "import os\nimport no_such_module_xyz\n",
            (),
            ["imports.py", "cannot import 'no_such_module_xyz' (line 2)", "install it"],
            id="import-error",
        ),
        pytest.param(
            "raises.py",
            "\n\nraise RuntimeError('bad config')\n",
            (),
            ["raises.py", "failed to load: RuntimeError: bad config (line 3)"],
            id="raises-while-loading",
        ),
        pytest.param(
            "empty.py",
            "x = 1\n",
            (),
            ["empty.py", "defines neither `flow` nor `build_flow(args)`", "add `flow ="],
            id="no-flow",
        ),
        pytest.param(
            "number.py",
            "flow = 42\n",
            (),
            ["number.py", "`flow` is int, not a Dataflow"],
            id="flow-not-a-dataflow",
        ),
        pytest.param(
            "built.py",
            "def build_flow(args):\n    return 'x'\n",
            (),
            ["build_flow(args) returned str, not a Dataflow"],
            id="build-flow-not-a-dataflow",
        ),
        pytest.param(
            "build.py",
            BUILD_RAISES,
            ("eu",),
            [
                "build.py",
                "failed in build_flow(['eu'])",
                "KeyError: 'no such region: eu' (line 3)",
                "fix build_flow",
            ],
            id="build-flow-raises",
        ),
    ],
)
def test_a_broken_pipeline_file_is_one_sentence(cjob, tmp_path, name, text, args, words) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = cjob(
        "run", "--store", str(tmp_path / "cp"), str(path), *(["--", *args] if args else [])
    )
    result.assert_mistake(*words)


def test_the_log_keeps_the_users_exception_as_the_cause(cjob, tmp_path) -> None:
    path = tmp_path / "build.py"
    path.write_text(BUILD_RAISES)
    result = cjob("run", str(path))
    result.assert_mistake("failed in build_flow")
    text = result.log.read_text()
    assert "KeyError: 'no such region: '" in text
    assert "The above exception was the direct cause" in text
    assert f'File "{path}", line 3, in build_flow' in text


def test_a_missing_pipeline_file(cjob, tmp_path) -> None:
    missing = tmp_path / "nope.py"
    sentence = cjob("run", str(missing)).assert_mistake()
    assert sentence == (
        f"pipeline file {missing} does not exist: check the path, or name an importable module "
        "(my_jobs.orders)"
    )


def test_a_directory_is_not_a_pipeline(cjob, tmp_path) -> None:
    (tmp_path / "jobs").mkdir()
    cjob("run", str(tmp_path / "jobs")).assert_mistake(
        f"pipeline {tmp_path / 'jobs'} is a directory", "give the .py file"
    )


def test_a_file_that_is_not_python(cjob, tmp_path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    cjob("run", str(notes)).assert_mistake(f"pipeline file {notes} is not a Python file")


def test_a_module_that_does_not_exist(cjob) -> None:
    cjob("run", "no_such_pkg_xyz.jobs").assert_mistake(
        "pipeline module 'no_such_pkg_xyz.jobs' cannot be found", "check its name"
    )


def test_arguments_for_a_pipeline_without_build_flow(cjob, ok_pipeline) -> None:
    cjob("run", ok_pipeline, "--", "--x").assert_mistake(
        "takes no arguments", "drop the arguments after --"
    )
