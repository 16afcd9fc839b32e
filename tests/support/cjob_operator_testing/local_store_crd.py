"""The CRD as the operator's tests judge jobs by it: local-directory stores admitted.

The operator's integration tests keep checkpoints in a local directory
(``spec.storage.endpoint: file:///…``), which the real CRD refuses (an S3 endpoint
is an ``http(s)://`` URL). The operator judges every job by the CRD
(:mod:`cjob_operator.admission`), so the harness points ``$CJOB_CRD_FILE`` at this
copy of the repository's CRD whose endpoint rule also admits ``file://`` URIs;
every other rule is the real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
CRD = ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
LOCAL_STORE = "self.startsWith('file:///') || "


def local_store_crd() -> dict[str, Any]:
    """The repository's CRD with ``spec.storage.endpoint`` also admitting ``file:///…``."""
    crd: dict[str, Any] = yaml.safe_load(CRD.read_text())
    for version in crd["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        endpoint = spec["properties"]["storage"]["properties"]["endpoint"]
        for rule in endpoint["x-kubernetes-validations"]:
            rule["rule"] = LOCAL_STORE + rule["rule"]
    return crd


def write_local_store_crd(path: Path) -> Path:
    path.write_text(yaml.safe_dump(local_store_crd()))
    return path


def unvalidated_crd() -> dict[str, Any]:
    """The repository's CRD with no validation of ``spec`` at all (``type: object`` keeping
    every field): what a cluster with an older CRD, or none of its validation, stores.
    Status, subresources, names and columns are the real ones."""
    crd: dict[str, Any] = yaml.safe_load(CRD.read_text())
    for version in crd["spec"]["versions"]:
        properties = version["schema"]["openAPIV3Schema"]["properties"]
        properties["spec"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return crd
