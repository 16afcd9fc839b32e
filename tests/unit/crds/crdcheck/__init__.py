"""Offline checks of the CheckpointedJob CRD for the tests.

Admission of custom resources (pruning, defaults, the structural schema, CEL rules,
kubectl's wording) is product code: :mod:`cjob_operator.admission`, which the
operator and ``cjob validate`` use. This package re-exports it for the tests and
adds what only the tests need: :mod:`crdcheck.manifest`, checks of the CRD object
itself (``kubernetes-validate`` and house rules).
"""

from cjob_operator.admission import (
    CustomResourceValidator,
    ErrorType,
    FieldError,
    Operation,
    ValidationResult,
)
from crdcheck.manifest import free_form_paths, lint, manifest_errors

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
