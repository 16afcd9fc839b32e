"""The command line itself (issue 11, item 7): help for every option, ``--version``, options
anywhere with ``--`` before the pipeline's arguments, a quiet ``-v``, and a JSON error event."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
from collections.abc import Iterator

import pytest

from barrier_runtime.cli import build_parser, run_cmd
from barrier_runtime.storage import errors


def _parsers(
    parser: argparse.ArgumentParser, path: str = "cjob"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, parser in _parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and (not action.help or action.help == argparse.SUPPRESS)
    ]
    assert missing == []


def test_every_command_has_help() -> None:
    missing = [
        f"{path} {choice.dest}"
        for path, parser in _parsers(build_parser())
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
        if not choice.help
    ]
    assert missing == []


def test_the_walk_finds_every_command() -> None:
    paths = {path for path, _ in _parsers(build_parser())}
    assert {
        "cjob run",
        "cjob demo",
        "cjob driver",
        "cjob stop",
        "cjob savepoint",
        "cjob checkpoints delete",
    } <= paths


def test_version(cjob) -> None:
    result = cjob("--version")
    assert result.code == 0
    assert result.out.strip() == f"cjob {importlib.metadata.version('checkpointed-jobs')}"


def test_help_says_where_pipeline_arguments_go(cjob) -> None:
    result = cjob("run", "--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert "cjob run [-h] [OPTIONS] PIPELINE [OPTIONS] [-- PIPELINE_ARGS ...]" in text
    assert "the pipeline's own arguments go after --" in text


# -- where options and pipeline arguments go --------------------------------------------


@pytest.fixture
def parsed(monkeypatch) -> list[argparse.Namespace]:
    """``cjob run``'s parsed arguments, recorded instead of running the job."""
    seen: list[argparse.Namespace] = []

    def record(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    monkeypatch.setattr(run_cmd, "run", record)
    return seen


@pytest.mark.parametrize(
    ("argv", "interval", "pipeline_args"),
    [
        (["--checkpoint-interval", "2", "p.py"], 2.0, []),
        (["p.py", "--checkpoint-interval", "2"], 2.0, []),
        (["p.py", "--checkpoint-interval", "2", "--", "--keys", "3"], 2.0, ["--keys", "3"]),
        (["p.py", "--", "--checkpoint-interval", "3"], 1.0, ["--checkpoint-interval", "3"]),
        (["-p", "3", "p.py", "--json", "--", "a", "--", "b"], 1.0, ["a", "--", "b"]),
    ],
)
def test_options_go_before_or_after_the_pipeline(
    cjob, parsed, argv, interval, pipeline_args
) -> None:
    assert cjob("run", *argv).code == 0
    (args,) = parsed
    assert (args.pipeline, args.checkpoint_interval, args.pipeline_args) == (
        "p.py",
        interval,
        pipeline_args,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["p.py", "--keys", "3"],
            "unknown option --keys: pipeline arguments go after --, as in "
            "cjob run PIPELINE [OPTIONS] -- --keys 3",
        ),
        (
            ["p.py", "extra"],
            "unexpected argument 'extra': pipeline arguments go after --, as in "
            "cjob run PIPELINE [OPTIONS] -- extra",
        ),
    ],
)
def test_pipeline_arguments_before_the_separator_are_refused(cjob, parsed, argv, message) -> None:
    result = cjob("run", *argv)
    assert result.code == 2 and parsed == []
    assert result.err.splitlines()[-1] == f"cjob run: error: {message}"
    assert "Traceback" not in result.err


def test_other_commands_keep_their_usual_errors(cjob) -> None:
    result = cjob("checkpoints", "list", "--store", "x")
    assert result.code == 2
    assert "the following arguments are required: --job" in result.err


# -- verbosity ----------------------------------------------------------------------------


@pytest.fixture
def chatty(monkeypatch) -> None:
    """``cjob run`` logs from our code and from the libraries around Spark, then fails."""

    def run(args: argparse.Namespace) -> int:
        logging.getLogger("barrier_runtime.driver.job_driver").debug("ours at debug")
        logging.getLogger("py4j.clientserver").debug("py4j at debug")
        logging.getLogger("py4j.java_gateway").warning("py4j at warning")
        logging.getLogger("pyspark.sql").info("pyspark at info")
        logging.getLogger("urllib3.connectionpool").debug("urllib3 at debug")
        raise errors.StorageError("the store is gone")

    monkeypatch.setattr(run_cmd, "run", run)


def test_v_shows_our_debug_lines_but_not_the_libraries(cjob, chatty) -> None:
    result = cjob("-v", "run", "p.py")
    assert "ours at debug" in result.err and "py4j at warning" in result.err
    for quiet in ("py4j at debug", "pyspark at info", "urllib3 at debug"):
        assert quiet not in result.err
    assert "Traceback (most recent call last)" in result.err  # -v still shows tracebacks


def test_vv_shows_everything(cjob, chatty) -> None:
    result = cjob("-vv", "run", "p.py")
    for line in ("ours at debug", "py4j at debug", "pyspark at info", "urllib3 at debug"):
        assert line in result.err


def test_without_v_the_terminal_stays_quiet(cjob, chatty) -> None:
    result = cjob("run", "p.py")
    assert result.lines[0] == "cjob: error: the store is gone"
    assert "ours at debug" not in result.err and "py4j" not in result.err


# -- a JSON error event in --json mode ---------------------------------------------------


def _last_event(out: str) -> dict:
    lines = out.strip().splitlines()
    return json.loads(lines[-1])


def test_a_mistake_ends_json_output_with_an_error_event(cjob, ok_pipeline, tmp_path) -> None:
    result = cjob(
        "run", ok_pipeline, "--json", "--store", str(tmp_path / "cp"), "--max-restarts", "-1"
    )
    sentence = result.assert_mistake()
    assert _last_event(result.out) == {
        "event": "error",
        "kind": "mistake",
        "message": sentence,
        "exit_code": 2,
        "log": str(result.log),
    }


def test_a_usage_error_in_json_mode_is_an_error_event_too(cjob) -> None:
    result = cjob("run", "p.py", "--json", "--bogus")
    assert result.code == 2
    event = _last_event(result.out)
    assert (event["event"], event["kind"], event["exit_code"]) == ("error", "mistake", 2)
    assert event["message"].startswith("unknown option --bogus")


def test_a_json_after_the_separator_belongs_to_the_pipeline(cjob) -> None:
    result = cjob("run", "p.py", "--bogus", "--", "--json")
    assert result.code == 2 and result.out == ""


def test_checkpoints_json_errors_are_events(cjob, tmp_path) -> None:
    result = cjob(
        "checkpoints", "list", "--json", "--store", str(tmp_path / "nope"), "--job", "a/b"
    )
    assert _last_event(result.out)["message"] == result.assert_mistake()


def test_a_bug_in_json_mode_is_an_internal_error_event(cjob, monkeypatch) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise KeyError("slot")

    monkeypatch.setattr(run_cmd, "run", broken)
    result = cjob("run", "p.py", "--json")
    assert result.code == 70
    event = _last_event(result.out)
    assert (event["kind"], event["message"], event["exit_code"]) == (
        "internal",
        "KeyError: 'slot'",
        70,
    )


def test_without_json_nothing_goes_to_stdout(cjob, ok_pipeline, tmp_path) -> None:
    result = cjob("run", ok_pipeline, "--store", str(tmp_path / "cp"), "--max-restarts", "-1")
    assert result.code == 2 and result.out == ""
