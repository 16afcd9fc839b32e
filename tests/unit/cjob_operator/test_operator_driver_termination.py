"""Why a driver pod stopped, as the operator reads it from the pod's container status."""

from __future__ import annotations

from cjob_operator import observe
from cjob_operator import status as status_mod
from cjob_operator.decide import decide
from cjob_operator.model import outcome as outcome_mod
from cjob_operator.model import spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import DriverView, Observation, StoreView
from cjob_operator.model.reasons import Reason


def _failed_pod(terminated: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"name": "wc-driver"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "driver", "state": {"terminated": terminated}}],
        },
    }


def test_the_drivers_one_line_failure_is_the_reason_with_the_exit_code() -> None:
    line = (
        "cjob: error: the Kubernetes API refused Spark's GET .../pods/wc-driver (403): "
        'pods "wc-driver" is forbidden'
    )
    view = observe.driver_view(_failed_pod({"exitCode": 2, "reason": "Error", "message": line}))
    assert view.state is DriverState.FAILED and view.exit_code == 2
    assert view.message == f"{line} (Error, exit code 2)"


def test_a_log_tail_gives_its_last_line_shortened() -> None:
    tail = "starting\n\njava.lang.OutOfMemoryError: " + "x" * 2000 + "\n"
    view = observe.driver_view(
        _failed_pod({"exitCode": 137, "reason": "OOMKilled", "message": tail})
    )
    assert view.message is not None
    assert view.message.startswith("java.lang.OutOfMemoryError: xxx")
    assert view.message.endswith("… (OOMKilled, exit code 137)")
    assert len(view.message) < observe.MESSAGE_LIMIT + 40


def test_without_a_message_the_reason_and_exit_code_remain() -> None:
    view = observe.driver_view(_failed_pod({"exitCode": 1, "reason": "Error"}))
    assert view.message == "Error (exit code 1)"


def test_the_drivers_max_parallelism_refusal_reaches_status_and_an_event() -> None:
    """Issue 11 item 9: the operator cannot import the pipeline, so a spec.maxParallelism that
    differs from the pipeline's is refused by the driver before Spark starts (exit code 2,
    one sentence as the termination message). That sentence is what status.error and the
    warning Event say. (Whether exit code 2 restarts under restartPolicy or fails at once is
    the restart handling's call, not pinned here.)"""
    line = (
        "cjob: error: maxParallelism is 256 in the job but 128 in the pipeline module "
        "jobs.orders: make them equal (it fixes the key groups of the state)"
    )
    driver = observe.driver_view(_failed_pod({"exitCode": 2, "reason": "Error", "message": line}))
    sp = spec.JobSpec.from_storage(
        {
            "image": "i:1",
            "pipeline": {"module": "jobs.orders"},
            "maxParallelism": 256,
            "storage": {"endpoint": "file:///s", "bucket": "b"},
        }
    )
    obs = Observation(
        namespace="ns",
        name="wc",
        uid="u",
        generation=1,
        deleting=False,
        spec=sp,
        spec_error=None,
        status=status.JobStatus(phase=Phase.RUNNING, last_reconciled_spec=dict(sp.raw)),
        driver=driver,
        control=None,
        store=StoreView.empty(),
        now=1000.0,
    )
    action = decide(obs)
    assert action.kind in (ActionKind.SCHEDULE, ActionKind.FAIL)
    assert action.warning and action.event and line in action.message
    new = status_mod.next_status(obs, action, outcome_mod.Outcome())
    assert new.error is not None and line in new.error


def test_why_a_job_restarts_stays_in_status_error_until_it_runs_again() -> None:
    sp = spec.JobSpec.from_storage(
        {
            "image": "i:1",
            "pipeline": {"module": "jobs.orders"},
            "storage": {"endpoint": "file:///s", "bucket": "b"},
        }
    )
    line = "cjob: error: maxParallelism is 256 in the job but 128 in the pipeline"
    restarting = status.JobStatus(
        phase=Phase.RESTARTING,
        error=f"the driver failed: {line}",
        last_reconciled_spec=dict(sp.raw),
    )

    def after(action_phase: Phase, driver: DriverView) -> status.JobStatus:
        obs = Observation(
            namespace="ns",
            name="wc",
            uid="u",
            generation=1,
            deleting=False,
            spec=sp,
            spec_error=None,
            status=restarting,
            driver=driver,
            control=None,
            store=StoreView.empty(),
            now=1000.0,
        )
        action = Action.wait(action_phase, Reason.BACKING_OFF, "restarting after the backoff")
        return status_mod.next_status(obs, action, outcome_mod.Outcome())

    backing_off = after(Phase.RESTARTING, DriverView.absent())
    assert backing_off.error is not None and line in backing_off.error
    running = after(Phase.RUNNING, DriverView(DriverState.RUNNING, "wc-driver", "r-1", 990.0))
    assert running.error is None


def test_a_restart_the_user_asks_for_starts_without_the_old_error() -> None:
    sp = spec.JobSpec.from_storage(
        {
            "image": "i:1",
            "pipeline": {"module": "jobs.orders"},
            "restartNonce": 2,
            "storage": {"endpoint": "file:///s", "bucket": "b"},
        }
    )
    failed = status.JobStatus(
        phase=Phase.FAILED,
        error="it was restarted 10 times: giving up",
        last_reconciled_spec={**dict(sp.raw), "restartNonce": 1},
    )
    obs = Observation(
        namespace="ns",
        name="wc",
        uid="u",
        generation=1,
        deleting=False,
        spec=sp,
        spec_error=None,
        status=failed,
        driver=DriverView.absent(),
        control=None,
        store=StoreView.empty(),
        now=1000.0,
    )
    action = decide(obs)
    assert action.kind is ActionKind.SCHEDULE and action.phase is Phase.RESTARTING
    assert status_mod.next_status(obs, action, outcome_mod.Outcome()).error is None
