"""Offline admission checks for the CheckpointedJob CRD (test support, not runtime code).

``kubernetes-validate`` knows only built-in kinds; this package checks custom
resources against a CRD the way the API server does: pruning and defaults, the
structural OpenAPI schema (through ``jsonschema``) and the ``x-kubernetes-validations``
CEL rules (through ``cel-python``), with errors worded like ``kubectl`` shows them.

>>> from pathlib import Path
>>> crd = Path(__file__).parents[4] / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
>>> validator = CustomResourceValidator.from_file(crd)
>>> result = validator.validate_create({
...     "apiVersion": "checkpointed.dev/v1alpha1", "kind": "CheckpointedJob",
...     "metadata": {"name": "demo"},
...     "spec": {"image": "cjob:1", "pipeline": {"module": "demo"}, "parallelism": 0,
...              "storage": {"endpoint": "http://minio:9000", "bucket": "chk"}}})
>>> print(result.messages[0])  # doctest: +NORMALIZE_WHITESPACE
spec.parallelism: Invalid value: 0:
spec.parallelism in body should be greater than or equal to 1

Modules: :mod:`~crdcheck.errors` (paths, wording), :mod:`~crdcheck.structural`
(prune, default, schema), :mod:`~crdcheck.cel` (rules), :mod:`~crdcheck.validator`
(the request pipeline), :mod:`~crdcheck.manifest` (checks of the CRD itself).
"""

from crdcheck.errors import ErrorType, FieldError
from crdcheck.manifest import free_form_paths, lint, manifest_errors
from crdcheck.validator import CustomResourceValidator, Operation, ValidationResult

__all__ = [
    "CustomResourceValidator",
    "ErrorType",
    "FieldError",
    "Operation",
    "ValidationResult",
    "free_form_paths",
    "lint",
    "manifest_errors",
]
