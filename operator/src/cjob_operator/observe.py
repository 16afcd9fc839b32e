"""Build an :class:`~cjob_operator.model.observation.Observation` (this is where reads happen).

Reads: the CR body (given; first checked against the CRD's schema and rules, whatever
the API server let through), the driver pod, the control API (only when the pod
runs), and the checkpoint store — fresh whenever a restore point may be chosen
(driver not running, an intent pending, deletion), otherwise at most every
``STORE_TTL`` seconds for the status. A store that cannot be read is tried again
with exponential backoff (:func:`store_retry_delay`: 2 s doubling up to 60 s, as
the Flink Kubernetes Operator retries a failed reconcile), not on every tick.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any

from cjob_operator import admission, manifests
from cjob_operator.act import perform
from cjob_operator.model import enums, observation, spec, status, times
from cjob_operator.model.enums import DriverState

STORE_TTL = 15.0
STORE_RETRY_INITIAL = 2.0
STORE_RETRY_MAX = 60.0


def store_retry_delay(failures: int) -> float:
    """Seconds to wait before reading a store again after ``failures`` failed reads.

    >>> [store_retry_delay(n) for n in (1, 2, 3, 6, 7, 20)]
    [2.0, 4.0, 8.0, 60.0, 60.0, 60.0]
    """
    return min(STORE_RETRY_INITIAL * 2.0 ** max(failures - 1, 0), STORE_RETRY_MAX)


def driver_view(pod: Mapping[str, Any] | None) -> observation.DriverView:
    if pod is None:
        return observation.DriverView.absent()
    meta = pod.get("metadata") or {}
    st = pod.get("status") or {}
    phase = st.get("phase") or "Pending"
    if meta.get("deletionTimestamp"):
        state = DriverState.TERMINATING
    else:
        state = {
            "Running": DriverState.RUNNING,
            "Succeeded": DriverState.SUCCEEDED,
            "Failed": DriverState.FAILED,
        }.get(phase, DriverState.PENDING)
    message, exit_code = _termination(st)
    return observation.DriverView(
        state=state,
        pod_name=meta.get("name"),
        deployment_id=(meta.get("annotations") or {}).get(manifests.ANNOTATION_DEPLOYMENT),
        started_at=times.from_rfc3339(st.get("startTime")),
        message=message or st.get("message") or st.get("reason"),
        exit_code=exit_code,
    )


def _termination(pod_status: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """Why the driver container stopped: its termination message (the driver's one-line
    failure, or the end of its log) with the kubelet's reason and exit code."""
    for cs in pod_status.get("containerStatuses") or ():
        term = (cs.get("state") or {}).get("terminated")
        if term:
            code = term.get("exitCode")
            reason = term.get("reason") or "terminated"
            said = _last_line(term.get("message"))
            text = (
                f"{said} ({reason}, exit code {code})" if said else f"{reason} (exit code {code})"
            )
            return text, None if code is None else int(code)
    return None, None


MESSAGE_LIMIT = 600
"""Characters of a termination message kept for status and Events."""


def _last_line(message: object) -> str | None:
    """The last non-empty line of a termination message (with FallbackToLogsOnError it is
    the log's tail: its last line is the driver's final word), shortened."""
    if not isinstance(message, str):
        return None
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[-1]
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 1] + "…"


def parse_spec(body: Mapping[str, Any]) -> tuple[spec.JobSpec | None, str | None]:
    """The spec, or why it cannot be used: first what the CRD refuses (an API server that
    stored the object without enforcing the schema does not make it valid), then what
    cannot be read."""
    refused = admission.refusal(body)
    if refused is not None:
        return None, refused
    try:
        return spec.JobSpec.from_storage(body.get("spec") or {}), None
    except spec.SpecError as exc:
        return None, str(exc)


async def _store(
    tools: perform.Tools, obs_base: dict[str, Any], sp: spec.JobSpec | None, fresh: bool, now: float
) -> observation.StoreView | None:
    if sp is None:
        return None
    memory = tools.memory
    last = memory.store_view
    if not fresh and last is not None and now - memory.store_read_at < STORE_TTL:
        return last
    failing = last is not None and not last.readable and memory.store_failures > 0
    if failing and now - memory.store_read_at < store_retry_delay(memory.store_failures):
        return last  # backing off: the same problem stands until the next attempt
    try:
        catalog = await perform.open_store(tools, observation_stub(obs_base, sp))
        view = await catalog.view()
    except Exception as exc:  # credentials missing, bad endpoint, …
        view = observation.StoreView.unreadable(f"{type(exc).__name__}: {exc}")
    memory.store_failures = 0 if view.readable else memory.store_failures + 1
    memory.store_view, memory.store_read_at = view, now
    return view


def observation_stub(base: Mapping[str, Any], sp: spec.JobSpec) -> observation.Observation:
    return observation.Observation(
        namespace=base["namespace"],
        name=base["name"],
        uid=base["uid"],
        generation=0,
        deleting=False,
        spec=sp,
        spec_error=None,
        status=status.JobStatus(),
        driver=observation.DriverView.absent(),
        control=None,
        store=None,
        now=0.0,
    )


async def observe(
    tools: perform.Tools, body: Mapping[str, Any], now: float, rng: random.Random | None = None
) -> observation.Observation:
    meta = body.get("metadata") or {}
    job = tools.job
    sp, spec_error = parse_spec(body)
    st = status.JobStatus.from_storage(body.get("status"))
    deleting = bool(meta.get("deletionTimestamp"))
    pod = await tools.kube.get("Pod", job.namespace, job.driver_pod())
    driver = driver_view(pod)
    control = None
    if driver.state is DriverState.RUNNING:
        client = await perform.control_client(tools)
        control = await client.observe()
        remembered = tools.memory.last_trigger
        if (
            control.reachable
            and remembered is not None
            and (control.last_trigger_time is None or control.last_trigger_time < remembered)
        ):
            control = _with_trigger(control, remembered)
    settled = st.phase in (enums.Phase.FAILED, enums.Phase.FINISHED) and st.intent is None
    fresh = not settled and (
        driver.state is not DriverState.RUNNING
        or st.intent is not None
        or deleting
        or (sp is not None and sp.state is enums.DesiredState.SUSPENDED)
    )
    base = {"namespace": job.namespace, "name": job.name, "uid": job.uid}
    store = await _store(tools, base, sp, fresh, now)
    return observation.Observation(
        namespace=job.namespace,
        name=job.name,
        uid=job.uid,
        generation=int(meta.get("generation") or 0),
        deleting=deleting,
        spec=sp,
        spec_error=spec_error,
        status=st,
        driver=driver,
        control=control,
        store=store,
        now=now,
        jitter=(rng or random.Random()).random(),
    )


def _with_trigger(view: observation.ControlView, when: float) -> observation.ControlView:
    return dataclasses.replace(view, last_trigger_time=when)
