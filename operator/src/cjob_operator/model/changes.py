"""Which spec changes need what: every field is tagged with a :class:`ChangeKind`.

The most severe changed field decides the action (Flink Kubernetes Operator style).
Fields the operator alone uses (restart policy, checkpoint interval, nonces, desired
state, upgrade mode, restore selection, periodic savepoints, rollback) are ``IGNORE``:
changing them never redeploys the driver. Everything the driver reads is ``UPGRADE``.

>>> classify({"image": "a", "state": "Running"}, {"image": "b", "state": "Suspended"}).kind
<ChangeKind.UPGRADE: 1>
>>> classify({"restartPolicy": {"maxRestarts": 1}}, {"restartPolicy": {"maxRestarts": 2}}).kind
<ChangeKind.IGNORE: 0>
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cjob_operator.model.enums import ChangeKind, NonceField

IGNORED_PATHS: tuple[str, ...] = (
    "restartPolicy",
    "state",
    "upgradeMode",
    "restoreFrom",
    *(field.value for field in NonceField),
    "allowFreshStart",
    "checkpointing.interval",
    "savepoints",
    "rollback",
)


@dataclass(frozen=True, slots=True)
class SpecDiff:
    kind: ChangeKind
    upgrade_paths: tuple[str, ...]
    ignored_paths: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.upgrade_paths or self.ignored_paths)


def field_kind(path: str) -> ChangeKind:
    for ignored in IGNORED_PATHS:
        if path == ignored or path.startswith(ignored + "."):
            return ChangeKind.IGNORE
    return ChangeKind.UPGRADE


def classify(old: Mapping[str, Any], new: Mapping[str, Any]) -> SpecDiff:
    """Compare the last reconciled spec with the current one."""
    upgrade: list[str] = []
    ignored: list[str] = []
    for path in sorted(set(_diff_paths(old, new, ""))):
        (upgrade if field_kind(path) is ChangeKind.UPGRADE else ignored).append(path)
    kind = ChangeKind.UPGRADE if upgrade else ChangeKind.IGNORE
    return SpecDiff(kind=kind, upgrade_paths=tuple(upgrade), ignored_paths=tuple(ignored))


def _diff_paths(old: Any, new: Any, prefix: str) -> Iterator[str]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in set(old) | set(new):
            path = f"{prefix}.{key}" if prefix else str(key)
            yield from _diff_paths(old.get(key), new.get(key), path)
    elif old != new:
        yield prefix
