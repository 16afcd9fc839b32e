"""A failure no restart can heal ends the job fast, naming the user's step and the record.

The in-process executor runs the same restart loop as the Spark driver
(:class:`~barrier_runtime.driver.job_driver.JobDriver`), so these runs prove
the driver's classification: a record that fails the same way is tried
``attempts_per_record`` times, a failure that heals is restarted past.
"""

import itertools
import tempfile

import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors import FileSource
from barrier_runtime.core import faults
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.driver import restart
from barrier_runtime.driver.job_driver import JobFailedError, UnrecoverableJobError
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.task_failure import FailureClass, TaskFailure
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

RECORDS = [{"k": i % 3, "n": i, "d": 0 if i == 40 else 1} for i in range(60)]


def _executor(flow: Dataflow, **kwargs) -> LocalExecutor:
    store = CheckpointStore(open_object_store(tempfile.mkdtemp(prefix="poison-")), "t/job")
    return LocalExecutor(
        flow, parallelism=2, store=store, config=CheckpointConfig(interval=0.02), **kwargs
    )


def _divide(r: dict) -> dict:
    return {**r, "q": r["n"] // r["d"]}


def test_a_step_that_raises_on_a_record_fails_the_job_after_three_attempts() -> None:
    flow = Dataflow("poison")
    flow.source("events", TestingSource(RECORDS, batch_size=5)).map("divide", _divide).sink(
        "out", TestingSink()
    )
    executor = _executor(flow, max_restarts=50)
    with pytest.raises(UnrecoverableJobError) as caught:
        executor.run()
    message = str(caught.value)
    assert message.startswith(
        "step 'divide' raised ZeroDivisionError: integer division or modulo by zero on record "
        "{'k': 1, 'n': 40, 'd': 0} (subtask "
    )
    assert "failed the same way on the same record in 3 attempts" in message
    assert executor.result.attempts == 3  # not the 50 restarts the budget allows
    assert 'in _divide\n    return {**r, "q": r["n"] // r["d"]}' in caught.value.detail
    assert executor.info().failure_detail == caught.value.detail


def test_a_keyed_function_and_a_key_function_are_named_by_their_steps() -> None:
    def count(state, r):
        return (state or 0) + 1 // r["d"], []

    flow = Dataflow("keyed")
    flow.source("events", TestingSource(RECORDS, batch_size=5)).key_by(
        "by-k", lambda r: r["k"]
    ).stateful_map("count", count).sink("out", TestingSink())
    with pytest.raises(UnrecoverableJobError, match=r"^step 'count' raised ZeroDivisionError"):
        _executor(flow, attempts_per_record=2).run()

    flow = Dataflow("keyed-by")
    flow.source("events", TestingSource(RECORDS, batch_size=5)).key_by(
        "by-missing", lambda r: r["missing"]
    ).stateful_map("count", count).sink("out", TestingSink())
    with pytest.raises(UnrecoverableJobError, match=r"^step 'by-missing' raised KeyError"):
        _executor(flow, attempts_per_record=1).run()


_flaky_calls = itertools.count()


def _fails_once(r: dict) -> dict:
    if r["n"] == 40 and next(_flaky_calls) == 0:
        raise TimeoutError("the lookup service timed out")
    return r


def test_a_record_that_fails_once_is_restarted_past_and_nothing_is_lost() -> None:
    sink = TestingSink()
    flow = Dataflow("flaky")
    flow.source("events", TestingSource(RECORDS, batch_size=5)).map("lookup", _fails_once).sink(
        "out", sink
    )
    result = _executor(flow).run()
    assert result.restarts == 1
    assert "step 'lookup' raised TimeoutError" in result.failures[0]
    assert sorted(r["n"] for r in sink.output) == list(range(60))


def test_a_malformed_line_under_fail_ends_the_job_naming_the_file_and_line(tmp_path) -> None:
    lines = [f'{{"n": {i}}}' for i in range(30)]
    lines[17] = '{"n": 17'
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    flow = Dataflow("files")
    flow.source("lines", FileSource(str(tmp_path))).sink("out", TestingSink())
    executor = _executor(flow)
    with pytest.raises(UnrecoverableJobError, match=r"a\.jsonl line 18.*in 3 attempts"):
        executor.run()
    assert executor.result.attempts == 3


def test_transient_failures_at_the_same_place_still_get_the_whole_restart_budget() -> None:
    """Injected crashes (lost workers, in effect) at the same point every attempt are
    transient: only the restart policy ends them."""
    crashes = [
        faults.Crash(faults.FaultPoint.PROCESSING, subtask=0, after_records=10, attempt=n)
        for n in range(6)
    ]
    flow = Dataflow("crashes")
    flow.source("events", TestingSource(RECORDS, batch_size=5)).sink("out", TestingSink())
    executor = _executor(flow, max_restarts=4, fault_injector=faults.FaultInjector(crashes))
    with pytest.raises(JobFailedError) as caught:
        executor.run()
    assert not isinstance(caught.value, UnrecoverableJobError)
    assert executor.result.attempts == 5 and "restart budget of 4" in str(caught.value)


def test_the_limit_gives_up_on_permanent_failures_at_once_and_counts_records_apart() -> None:
    limit = restart.SameFailureLimit(attempts=3)
    permanent = TaskFailure(FailureClass.PERMANENT, "InvalidPipelineError: differs")
    assert limit.verdict(permanent) == "a restart cannot change the pipeline or its configuration"
    a = TaskFailure(FailureClass.RECORD, "E: a", fingerprint="a")
    b = TaskFailure(FailureClass.RECORD, "E: b", fingerprint="b")
    transient = TaskFailure(FailureClass.TRANSIENT, "WorkerLostError: gone")
    verdicts = [limit.verdict(f) for f in (a, b, transient, a, b, transient, a)]
    assert verdicts[:-1] == [None] * 6
    assert verdicts[-1] == "it failed the same way on the same record in 3 attempts"
