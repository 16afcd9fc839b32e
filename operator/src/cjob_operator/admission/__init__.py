"""Admission of ``CheckpointedJob`` objects: the CRD's own schema and CEL rules, offline.

What the API server checks when it admits a custom resource, reproduced without
a cluster, from the CRD the operator ships
(:mod:`~cjob_operator.admission.bundled`): pruning and defaults, the structural
OpenAPI schema (through ``jsonschema``), the ``x-kubernetes-validations`` CEL
rules (through ``cel-python``), with errors worded as ``kubectl`` shows them.

One validator, two users: the operator refuses every object it reads that the
CRD would refuse (an API server that stored it without enforcing the schema does
not make it valid), and ``cjob validate FILE`` checks manifests before they are
applied. Both say the same sentence, :func:`refusal`:

>>> job = {
...     "apiVersion": "checkpointed.dev/v1alpha1", "kind": "CheckpointedJob",
...     "metadata": {"name": "demo"},
...     "spec": {"image": "cjob:1", "pipeline": {"module": "demo"}, "parallelism": 0,
...              "storage": {"endpoint": "http://minio:9000", "bucket": "chk",
...                          "credentialsSecret": {"name": "minio"}}}}
>>> print(refusal(job))  # doctest: +NORMALIZE_WHITESPACE
CheckpointedJob.checkpointed.dev "demo" is invalid: spec.parallelism: Invalid value: 0:
spec.parallelism in body should be greater than or equal to 1
>>> job["spec"]["parallelism"] = 2
>>> refusal(job) is None
True

Modules: :mod:`~cjob_operator.admission.errors` (paths, wording),
:mod:`~cjob_operator.admission.structural` (prune, default, schema),
:mod:`~cjob_operator.admission.cel` (rules), :mod:`~cjob_operator.admission.validator`
(the request pipeline), :mod:`~cjob_operator.admission.bundled` (the shipped CRD).
Pure: no Kubernetes client, no kopf, no I/O beyond reading the CRD file once.
"""

from cjob_operator.admission.bundled import (
    CRD_FILE,
    CRD_FILE_ENV,
    bundled_crd,
    refusal,
    validator,
)
from cjob_operator.admission.errors import ErrorType, FieldError
from cjob_operator.admission.validator import (
    CustomResourceValidator,
    Operation,
    ValidationResult,
)

__all__ = [
    "CRD_FILE",
    "CRD_FILE_ENV",
    "CustomResourceValidator",
    "ErrorType",
    "FieldError",
    "Operation",
    "ValidationResult",
    "bundled_crd",
    "refusal",
    "validator",
]
