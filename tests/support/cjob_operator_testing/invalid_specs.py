"""The specs of issue 27 the CRD refuses, as changes to ``examples/manifests/minimal.yaml``.

An API server that does not enforce the CRD's schema (one with an older CRD, or none
of its validation) stores them; the operator must still refuse each with ``InvalidSpec``,
and ``cjob validate`` offline, with the same sentence.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
MINIMAL = ROOT / "examples" / "manifests" / "minimal.yaml"

Change = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Change:
    *parents, leaf = path.split(".")

    def change(spec: dict[str, Any]) -> None:
        node = spec
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value

    return change


INVALID: dict[str, Change] = {
    "interval-fraction": _set("checkpointing.interval", "1.5s"),
    "interval-two-units": _set("checkpointing.interval", "1m30s"),
    "memory-fraction": _set("executor.memory", "1.5Gi"),
    "nonce-string": _set("restartNonce", "again"),
    "field-misspelt": _set("checkpointing.intervall", "10s"),
    "bucket-upper-case": _set("storage.bucket", "Checkpoints"),
}
"""Case name -> the change that makes the minimal example invalid."""


def minimal(name: str, namespace: str | None = None) -> dict[str, Any]:
    """A fresh copy of the minimal example, renamed (and moved to ``namespace``)."""
    job: dict[str, Any] = yaml.safe_load(MINIMAL.read_text())
    job["metadata"] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return copy.deepcopy(job)


def invalid(case: str, namespace: str | None = None) -> dict[str, Any]:
    """The minimal example named ``case`` with that case's change."""
    job = minimal(case, namespace)
    INVALID[case](job["spec"])
    return job
