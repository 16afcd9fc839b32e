"""Kubernetes Events about a CheckpointedJob (never with secret values in them)."""

from __future__ import annotations

import logging
import os
import socket
import time

from cjob_operator import API_VERSION, KIND
from cjob_operator.act import kube
from cjob_operator.model import times

logger = logging.getLogger(__name__)

COMPONENT = "cjob-operator"
_INSTANCE = os.environ.get("POD_NAME") or socket.gethostname()


async def post(
    client: kube.KubeClient,
    namespace: str,
    name: str,
    uid: str,
    warning: bool,
    reason: str,
    message: str,
) -> None:
    """Post one Event; failures are logged and ignored (events are best effort)."""
    now = times.to_rfc3339(time.time())
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{name}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": name,
            "namespace": namespace,
            "uid": uid,
        },
        "type": "Warning" if warning else "Normal",
        "reason": reason,
        "message": message[:1000],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": _INSTANCE,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        await client.create(event)
    except Exception as exc:  # events must never break a reconcile
        logger.warning("could not post event %s for %s/%s: %s", reason, namespace, name, exc)
