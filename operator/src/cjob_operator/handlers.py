"""The thin kopf layer: every handler funnels into one serialized reconcile per job.

- ``on.create`` / ``on.update`` / ``on.resume`` react at once to spec changes;
- a ``timer`` every ``CJOB_RECONCILE_INTERVAL`` seconds (default 5) reconciles
  level-based: it notices failed drivers and reads checkpoint progress (periodic
  checkpoints are paced by the driver itself, so ``spec.checkpointing.interval``
  is honoured below this tick);
- ``on.delete`` (with the operator's finalizer) repeats until the job is released.

A per-job lock in kopf's per-object ``memo`` keeps reconciles of one job serial.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Mapping
from typing import Any

import kopf
import kubernetes

from cjob_operator import GROUP, PLURAL, VERSION, manifests, metrics, reconcile
from cjob_operator.act import kube, perform
from cjob_operator.model.action import ActionKind

logger = logging.getLogger(__name__)

TICK = float(os.environ.get("CJOB_RECONCILE_INTERVAL", "5"))
DRIVER_SERVICE_ACCOUNT = os.environ.get("CJOB_DRIVER_SERVICE_ACCOUNT") or None
"""The driver ServiceAccount for jobs whose spec names none (the chart sets it)."""
FINALIZER = f"{GROUP}/finalizer"
_clients: dict[str, kube.KubeClient] = {}


def client() -> kube.KubeClient:
    if "default" not in _clients:
        _clients["default"] = kube.KubeClient()
    return _clients["default"]


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    threads = int(os.environ.get("CJOB_IO_THREADS", "16"))
    asyncio.get_running_loop().set_default_executor(
        concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="cjob-io")
    )
    try:
        kube.load_configuration(pool_size=threads)
    except kubernetes.config.ConfigException as exc:
        # Permanent: retrying cannot conjure a cluster; exit so the failure is visible.
        raise kopf.PermanentError(
            f"no Kubernetes API to manage: neither an in-cluster service account nor a "
            f"kubeconfig was found ({exc})"
        ) from exc
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration"
    )
    settings.posting.level = logging.WARNING
    settings.watching.connect_timeout = 30
    settings.watching.server_timeout = 300


def _tools(meta: Mapping[str, Any], memo: kopf.Memo) -> perform.Tools:
    if "cjob" not in memo:
        memo["cjob"] = perform.JobMemory()
        memo["cjob_lock"] = asyncio.Lock()
    job = manifests.JobRef(meta["namespace"], meta["name"], meta.get("uid", ""))
    return perform.Tools(client(), memo["cjob"], job, DRIVER_SERVICE_ACCOUNT)


async def _reconcile(meta: Mapping[str, Any], memo: kopf.Memo) -> ActionKind | None:
    tools = _tools(meta, memo)
    async with memo["cjob_lock"]:
        body = await tools.kube.get("CheckpointedJob", tools.job.namespace, tools.job.name)
        if body is None:
            return None
        try:
            _, action = await reconcile.reconcile(tools, body)
        except Exception:
            metrics.RECONCILE_ERRORS.labels(tools.job.namespace, tools.job.name).inc()
            raise
        return action.kind


@kopf.on.create(GROUP, VERSION, PLURAL, backoff=TICK, errors=kopf.ErrorsMode.TEMPORARY)
@kopf.on.update(GROUP, VERSION, PLURAL, backoff=TICK, errors=kopf.ErrorsMode.TEMPORARY)
@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=TICK, errors=kopf.ErrorsMode.TEMPORARY)
async def changed(meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    await _reconcile(meta, memo)


@kopf.timer(GROUP, VERSION, PLURAL, interval=TICK, initial_delay=TICK, backoff=TICK)
async def tick(meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    await _reconcile(meta, memo)


@kopf.on.delete(GROUP, VERSION, PLURAL, backoff=TICK, errors=kopf.ErrorsMode.TEMPORARY)
async def deleted(meta: kopf.Meta, memo: kopf.Memo, **_: Any) -> None:
    kind = await _reconcile(meta, memo)
    if kind not in (ActionKind.RELEASE, None):
        raise kopf.TemporaryError(
            f"deletion in progress ({kind.value if kind else ''})", delay=TICK
        )
