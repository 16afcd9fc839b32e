"""The top-level handler: what the terminal sees, the exit code, and what the log keeps."""

from __future__ import annotations

import argparse
import logging
import os

import pytest

from barrier_runtime.cli import failures, run_cmd
from barrier_runtime.driver import job_driver
from barrier_runtime.spark import errors as spark_errors
from barrier_runtime.spark import session
from barrier_runtime.storage import errors


def _raising(exc: BaseException):
    def run(args: argparse.Namespace) -> int:
        logging.getLogger("barrier_runtime.test").debug("what happened before")
        raise exc

    return run


@pytest.fixture
def fails_with(monkeypatch):
    """Make ``cjob run`` raise ``exc`` (after parsing its arguments)."""

    def install(exc: BaseException) -> None:
        monkeypatch.setattr(run_cmd, "run", _raising(exc))

    return install


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (session.SparkUnavailableError("Spark needs Java 17 or newer: install a JRE"), 2),
        (failures.InvalidArgumentError("--conf expects KEY=VALUE"), 2),
        (errors.NoUsableCheckpointError("no usable checkpoint: allow a fresh start"), 2),
        (errors.StorageUnavailableError("cannot reach S3 at http://x: check the endpoint"), 75),
        (errors.StorageAccessDeniedError("S3 refused the credentials: fix the Secret"), 75),
        (spark_errors.KubernetesAccessError("the Kubernetes API refused Spark's POST (403)"), 75),
    ],
)
def test_mistakes_exit_2_and_what_may_heal_exits_75_with_the_log_path(
    cjob, fails_with, exc, code
) -> None:
    """The exit code tells the operator whether restarting the driver pod can help."""
    fails_with(exc)
    result = cjob("run", "p.py")
    assert result.assert_mistake(code=code) == str(exc)
    text = result.log.read_text()
    assert "what happened before" in text  # run logs everything at DEBUG from the start
    assert result.log.name.startswith("cjob-run-")


def test_the_two_lines_exactly(cjob, fails_with, log_dir) -> None:
    fails_with(session.SparkUnavailableError("Spark's JVM exited while starting: fix JAVA_HOME"))
    result = cjob("run", "p.py")
    (log,) = log_dir.iterdir()
    assert result.err == (
        "cjob: error: Spark's JVM exited while starting: fix JAVA_HOME\n"
        f"cjob: details: {log} (or run with --verbose)\n"
    )
    assert result.out == ""


def test_verbose_puts_the_traceback_on_stderr_too(cjob, fails_with) -> None:
    fails_with(errors.BucketNotFoundError("bucket b does not exist"))
    result = cjob("--verbose", "run", "p.py")
    assert result.code == 2
    assert "Traceback (most recent call last)" in result.err
    assert "cjob: error: bucket b does not exist" in result.err
    assert "Traceback" in result.log.read_text()


def test_a_bug_is_an_internal_error_not_a_traceback(cjob, fails_with) -> None:
    fails_with(KeyError("slot"))
    result = cjob("run", "p.py")
    assert result.code == 70  # EX_SOFTWARE: the operator may restart a driver that hit a bug
    assert "Traceback" not in result.err
    assert result.lines[0] == "cjob: internal error: KeyError: 'slot'"
    assert "KeyError: 'slot'" in result.log.read_text()


def test_a_failed_job_is_exit_1_with_the_details_path(cjob, fails_with) -> None:
    fails_with(job_driver.JobFailedError("restart budget spent; last failure: worker 1 lost"))
    result = cjob("run", "p.py")
    assert result.code == 1 and "Traceback" not in result.err
    assert result.lines[0] == (
        "cjob: job failed: restart budget spent; last failure: worker 1 lost"
    )
    assert "JobFailedError" in result.log.read_text()


def test_interrupt_is_130(cjob, fails_with) -> None:
    fails_with(KeyboardInterrupt())
    result = cjob("run", "p.py")
    assert (result.code, result.err) == (130, "cjob: interrupted\n")


def test_multi_line_messages_become_one_line() -> None:
    outcome = failures.classify(errors.StorageError("first\n  second"))
    assert (outcome.headline, outcome.code) == ("cjob: error: first second", 2)


def test_no_log_directory_still_gives_one_sentence(cjob, fails_with, monkeypatch) -> None:
    monkeypatch.setattr(failures.logfile, "writable_directory", lambda: None)
    fails_with(errors.StorageError("the store broke: check it"))
    result = cjob("run", "p.py")
    assert result.code == 2
    assert result.lines == [
        "cjob: error: the store broke: check it",
        "cjob: details: run with --verbose (no log file: no writable log directory; "
        "set $CJOB_LOG_DIR)",
    ]


@pytest.mark.parametrize(
    ("argv", "exported"),
    [
        (["run", "p.py"], True),
        (["--verbose", "run", "p.py"], True),
        (["-vv", "run", "p.py"], False),
        (["demo"], True),
        (["driver", "--config", "x.json"], False),
    ],
)
def test_the_jvm_writes_into_the_log_file_unless_very_verbose(
    cjob, monkeypatch, argv, exported
) -> None:
    from barrier_runtime.cli import demo_cmd, driver_cmd

    seen: list[str | None] = []

    def record(args: argparse.Namespace) -> int:
        seen.append(os.environ.get(session.JVM_LOG_ENV))
        return 0

    for module in (run_cmd, demo_cmd, driver_cmd):
        monkeypatch.setattr(module, "run", record)
    monkeypatch.delenv(session.JVM_LOG_ENV, raising=False)
    assert cjob(*argv).code == 0
    (value,) = seen
    if exported:
        command = next(word for word in argv if not word.startswith("-"))
        assert value is not None and os.path.basename(value).startswith(f"cjob-{command}-")
    else:
        assert value is None
    assert session.JVM_LOG_ENV not in os.environ  # restored after the command


def test_the_terminal_stays_at_the_cli_level_while_the_file_gets_debug(cjob, monkeypatch) -> None:
    def chatty(args: argparse.Namespace) -> int:
        logging.getLogger("barrier_runtime.x").info("an info line")
        logging.getLogger("barrier_runtime.x").error("an error line")
        raise errors.StorageError("stop here")

    monkeypatch.setattr(run_cmd, "run", chatty)
    result = cjob("run", "p.py")
    assert "an error line" in result.err and "an info line" not in result.err
    text = result.log.read_text()
    assert "an info line" in text and "an error line" in text


def test_the_driver_shows_its_lifecycle_lines(cjob, monkeypatch) -> None:
    from barrier_runtime.cli import driver_cmd

    def lifecycle(args: argparse.Namespace) -> int:
        logging.getLogger("barrier_runtime.driver.job_driver").info("attempt 1 started")
        logging.getLogger("barrier_runtime.storage").info("not shown")
        return 0

    monkeypatch.setattr(driver_cmd, "run", lifecycle)
    result = cjob("driver", "--config", "x.json")
    assert "attempt 1 started" in result.err and "not shown" not in result.err


def test_in_a_container_the_headline_becomes_the_termination_message(
    cjob, fails_with, monkeypatch, tmp_path
) -> None:
    message = tmp_path / "termination-log"
    message.write_text("")  # the kubelet creates the file; cjob only fills it
    monkeypatch.setenv(failures.TERMINATION_MESSAGE_ENV, str(message))
    refusal = session.KubernetesAccessError("the Kubernetes API refused Spark's GET (403): no")
    fails_with(refusal)
    cjob("run", "p.py").assert_mistake(code=75)
    assert message.read_text() == f"cjob: error: {refusal}"


def test_in_a_pod_the_details_are_in_the_pods_log_not_in_a_file_that_goes_with_it(
    cjob, fails_with, monkeypatch, tmp_path
) -> None:
    namespace = tmp_path / "namespace"
    namespace.write_text("streaming\n")
    monkeypatch.setenv(failures.IN_KUBERNETES_ENV, "10.96.0.1")
    monkeypatch.setenv("HOSTNAME", "wordcount-driver")
    monkeypatch.setattr(failures, "POD_NAMESPACE_FILE", str(namespace))
    fails_with(job_driver.JobFailedError("restart budget spent; last failure: worker 1 lost"))

    result = cjob("run", "p.py")

    assert result.code == 1
    assert "Traceback (most recent call last)" in result.err  # the pod's log keeps it
    assert result.err.endswith(
        "cjob: job failed: restart budget spent; last failure: worker 1 lost\n"
        "cjob: details: the traceback above, in the pod's log "
        "(kubectl logs -n streaming wordcount-driver)\n"
    )
    assert "/.local/state/" not in result.err


def test_outside_a_container_no_termination_message_file_is_made(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(failures.TERMINATION_MESSAGE_ENV, str(tmp_path / "absent"))
    assert not failures.write_termination_message("cjob: error: x")
    assert not (tmp_path / "absent").exists()


def test_verbose_shows_the_failing_steps_traceback_and_the_log_keeps_it(cjob, fails_with) -> None:
    detail = (
        'Traceback (most recent call last):\n  File "flows.py", line 9, in parse\nValueError: x\n'
    )
    fails_with(job_driver.UnrecoverableJobError("step 'parse' raised ValueError: x", detail))
    quiet = cjob("run", "p.py")
    assert quiet.code == 1 and 'File "flows.py", line 9' not in quiet.err
    assert 'File "flows.py", line 9, in parse' in quiet.log.read_text()
    loud = cjob("--verbose", "run", "p.py")
    assert "the failing step's traceback:" in loud.err and 'File "flows.py", line 9' in loud.err
