"""Carry out one :class:`~cjob_operator.model.action.Action` against the world."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field

from cjob_operator import manifests, metrics
from cjob_operator.act import catalog, control, kube
from cjob_operator.model import observation, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.outcome import Outcome

logger = logging.getLogger(__name__)


@dataclass
class JobMemory:
    """Per-job facts kept in memory between reconciles (kopf's per-object memo)."""

    token: str | None = None
    last_trigger: float | None = None
    store_view: observation.StoreView | None = None
    store_read_at: float = 0.0
    store_failures: int = 0
    """Consecutive failed reads of the checkpoint store (the retry backs off)."""
    phase_metric_set: bool = False
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Tools:
    kube: kube.KubeClient
    memory: JobMemory
    job: manifests.JobRef
    driver_service_account: str | None = None
    """The operator's configured driver ServiceAccount (for specs that name none)."""


async def control_client(tools: Tools, timeout: float = 5.0) -> control.ControlClient:
    job = tools.job
    if tools.memory.token is None:
        tools.memory.token = await tools.kube.secret_value(
            job.namespace, job.token_secret(), manifests.TOKEN_KEY
        )
    url = control.base_url(job.namespace, job.name, job.service(), manifests.CONTROL_PORT)
    return control.ControlClient(url, tools.memory.token, timeout)


async def _ensure_token(tools: Tools) -> None:
    job = tools.job
    existing = await tools.kube.secret_value(job.namespace, job.token_secret(), manifests.TOKEN_KEY)
    if existing is None:
        token = secrets.token_urlsafe(32)
        if not await tools.kube.create(manifests.token_secret(job, token)):
            token = (
                await tools.kube.secret_value(
                    job.namespace, job.token_secret(), manifests.TOKEN_KEY
                )
                or token
            )
        existing = token
    tools.memory.token = existing


async def _deploy(tools: Tools, obs: observation.Observation, action: Action) -> Outcome:
    assert obs.spec is not None and obs.status.intent is not None
    job = tools.job
    sp = action.spec or obs.spec  # the last stable spec while rolled back
    await _ensure_token(tools)
    await tools.kube.apply(
        manifests.config_map(job, sp, obs.status.intent.id, obs.status.restarts.recent)
    )
    await tools.kube.apply(manifests.service(job))
    pod = manifests.driver_pod(
        job, sp, obs.status.intent.id, action.restore, tools.driver_service_account
    )
    if not await tools.kube.create(pod):
        return Outcome(error="a driver pod already exists; will retry")
    tools.memory.last_trigger = None
    tools.memory.store_view = None
    return Outcome()


async def _trigger(tools: Tools, obs: observation.Observation, action: Action) -> Outcome:
    assert action.snapshot is not None
    client = await control_client(tools)
    try:
        cid = await client.trigger(action.snapshot)
    except control.ControlApiError as exc:
        return Outcome(error=f"could not trigger a {action.snapshot.value}: {exc}")
    tools.memory.last_trigger = obs.now
    metrics.CHECKPOINTS_TRIGGERED.labels(obs.namespace, obs.name, action.snapshot.value).inc()
    return Outcome(triggered_id=cid)


async def _stop(tools: Tools, obs: observation.Observation, action: Action) -> Outcome:
    assert action.intent is not None
    timeout = (obs.spec.checkpointing.timeout if obs.spec else 600.0) + 30.0
    client = await control_client(tools, timeout)
    it = action.intent
    try:
        path, sid = await client.stop_with_savepoint(timeout)
    except control.ControlApiError as exc:
        return Outcome(
            intent=it.evolve(error=str(exc)[:300], retry_at=action.retry_at),
            error=f"final savepoint failed: {exc}",
        )
    saved = status.SavepointRef(sid, path, obs.now) if path else None
    return Outcome(
        intent=it.evolve(
            done=True, savepoint_path=path, savepoint_id=sid, error=None, retry_at=None
        ),
        savepoint=saved,
    )


async def _release(tools: Tools, obs: observation.Observation) -> Outcome:
    job = tools.job
    for kind, name in (
        ("Service", job.service()),
        ("ConfigMap", job.config_map()),
        ("Secret", job.token_secret()),
    ):
        await tools.kube.delete(kind, job.namespace, name)
    if obs.spec is not None:
        try:
            store = await open_store(tools, obs)
            removed = await store.cleanup(obs.spec.checkpointing.retained)
            if removed:
                logger.info(
                    "removed %d checkpoint folders of %s/%s", len(removed), obs.namespace, obs.name
                )
        except Exception as exc:  # cleanup is best effort; never block deletion
            logger.warning("checkpoint cleanup of %s/%s failed: %s", obs.namespace, obs.name, exc)
    metrics.forget(obs.namespace, obs.name)
    return Outcome()


async def _discard(tools: Tools, obs: observation.Observation, action: Action) -> Outcome:
    ids = tuple(r.id for r in action.discard if r.id is not None)
    try:
        store = await open_store(tools, obs)
    except Exception as exc:  # credentials missing, bad endpoint, …
        return Outcome(error=f"could not open the checkpoint store: {type(exc).__name__}: {exc}")
    gone, error = await store.discard_savepoints(ids)
    tools.memory.store_view = None  # read the store afresh next time
    return Outcome(discarded=gone, error=error)


async def open_store(tools: Tools, obs: observation.Observation) -> catalog.Catalog:
    assert obs.spec is not None
    st = obs.spec.storage
    access = secret = None
    if st.credentials is not None:
        access = await tools.kube.secret_value(
            obs.namespace, st.credentials.name, st.credentials.access_key_key
        )
        secret = await tools.kube.secret_value(
            obs.namespace, st.credentials.name, st.credentials.secret_key_key
        )
    return catalog.open_catalog(
        st.endpoint, st.bucket, st.job_root(obs.namespace, obs.name), access, secret
    )


async def perform(tools: Tools, obs: observation.Observation, action: Action) -> Outcome:
    kind = action.kind
    if kind is ActionKind.DEPLOY:
        return await _deploy(tools, obs, action)
    if kind is ActionKind.DELETE_DRIVER:
        await tools.kube.delete("Pod", obs.namespace, tools.job.driver_pod())
        return Outcome()
    if kind is ActionKind.TRIGGER:
        return await _trigger(tools, obs, action)
    if kind is ActionKind.STOP:
        return await _stop(tools, obs, action)
    if kind is ActionKind.RELEASE:
        return await _release(tools, obs)
    if kind is ActionKind.DISCARD:
        return await _discard(tools, obs, action)
    return Outcome()
