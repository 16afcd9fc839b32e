"""The CRD the operator ships, and the one question asked of it: would it admit this object?

The CRD travels inside the package (``checkpointedjobs.checkpointed.dev.yaml`` next to
this module), a byte-for-byte copy of ``crds/`` and of the chart's ``crds/`` (a test
keeps the three equal), so the operator and ``cjob validate`` judge by the schema a
cluster installed from the same release enforces. ``$CJOB_CRD_FILE`` names another
CRD file to judge by instead (a cluster that runs the CRD of another release; the
operator's tests, whose jobs keep checkpoints in a local directory).

:func:`refusal` memoises by the object's content: the operator asks on every
reconcile, and the answer changes only when the object does.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from cjob_operator.admission import validator as validator_mod

CRD_FILE = "checkpointedjobs.checkpointed.dev.yaml"
"""The packaged CRD's file name (as in ``crds/`` and the chart's ``crds/``)."""
CRD_FILE_ENV = "CJOB_CRD_FILE"
"""Names a CRD file to judge by instead of the packaged one."""
_UNJUDGED = ("status",)
"""What admission of a new object does not look at (a subresource: dropped)."""
_METADATA = ("name", "generateName")


def bundled_crd() -> dict[str, Any]:
    """The packaged CustomResourceDefinition, parsed."""
    text = importlib.resources.files(__package__).joinpath(CRD_FILE).read_text("utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


@functools.cache
def validator() -> validator_mod.CustomResourceValidator:
    """The validator of the CRD's storage version (built once): the packaged CRD, or the
    file ``$CJOB_CRD_FILE`` names."""
    chosen = os.environ.get(CRD_FILE_ENV)
    if chosen:
        return validator_mod.CustomResourceValidator.from_file(Path(chosen))
    return validator_mod.CustomResourceValidator(bundled_crd())


def refusal(obj: Mapping[str, Any]) -> str | None:
    """What the API server would answer to creating ``obj`` with ``kubectl apply`` (strict
    field validation), or ``None`` when it would admit it."""
    meta = obj.get("metadata")
    judged = {key: value for key, value in obj.items() if key not in _UNJUDGED}
    if isinstance(meta, Mapping):
        judged["metadata"] = {key: meta[key] for key in _METADATA if key in meta}
    return _refusal(json.dumps(judged, sort_keys=True, default=str))


@functools.lru_cache(maxsize=512)
def _refusal(judged: str) -> str | None:
    result = validator().validate_create(json.loads(judged))
    return None if result.ok else result.message()
