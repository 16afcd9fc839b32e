"""Why a driver pod stopped, as the operator reads it from the pod's container status."""

from __future__ import annotations

from cjob_operator import observe
from cjob_operator.model.enums import DriverState


def _failed_pod(terminated: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": "wc-driver"},
            "status": {"phase": "Failed",
                       "containerStatuses": [{"name": "driver",
                                              "state": {"terminated": terminated}}]}}


def test_the_drivers_one_line_failure_is_the_reason_with_the_exit_code() -> None:
    line = ("cjob: error: the Kubernetes API refused Spark's GET .../pods/wc-driver (403): "
            'pods "wc-driver" is forbidden')
    view = observe.driver_view(_failed_pod(
        {"exitCode": 2, "reason": "Error", "message": line}))
    assert view.state is DriverState.FAILED and view.exit_code == 2
    assert view.message == f"{line} (Error, exit code 2)"


def test_a_log_tail_gives_its_last_line_shortened() -> None:
    tail = "starting\n\njava.lang.OutOfMemoryError: " + "x" * 2000 + "\n"
    view = observe.driver_view(_failed_pod(
        {"exitCode": 137, "reason": "OOMKilled", "message": tail}))
    assert view.message is not None
    assert view.message.startswith("java.lang.OutOfMemoryError: xxx")
    assert view.message.endswith("… (OOMKilled, exit code 137)")
    assert len(view.message) < observe.MESSAGE_LIMIT + 40


def test_without_a_message_the_reason_and_exit_code_remain() -> None:
    view = observe.driver_view(_failed_pod({"exitCode": 1, "reason": "Error"}))
    assert view.message == "Error (exit code 1)"
