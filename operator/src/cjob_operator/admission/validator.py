"""Validate custom resources against a CRD offline, like the API server.

The request pipeline (see ``customResourceStrategy`` in apiextensions-apiserver):

1. decode: prune undeclared fields; a strict client (``kubectl apply`` since 1.27)
   gets ``strict decoding error: unknown field "spec.x"`` and nothing else;
2. default (also applied to the stored old object, as on every read);
3. status subresource: on create the ``status`` stanza is dropped, on update of the
   main resource it is kept from the old object, on update of ``/status`` only the
   status is taken from the request;
4. structural-schema validation; on update, errors at unchanged values are ratcheted
   (returned as warnings);
5. CEL rules, unless step 4 found a *blocking* error (required, enum, type, too
   long, too many), in which case one extra error says the rules were not checked.
"""

from __future__ import annotations

import copy
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

import yaml

from cjob_operator.admission import cel, errors, structural
from cjob_operator.admission.errors import ErrorType, FieldError, Path
from cjob_operator.admission.structural import Schema


class Operation(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    UPDATE_STATUS = "update /status"


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """What the API server would answer: the stored object or the errors."""

    kind: str
    group: str
    version: str
    name: str
    object: dict[str, Any]
    errors: tuple[FieldError, ...]
    warnings: tuple[FieldError, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def messages(self) -> list[str]:
        return [str(e) for e in self.errors]

    def message(self) -> str:
        """The ``Status.message`` of the API server's rejection."""
        if any(e.type is ErrorType.UNKNOWN_FIELD for e in self.errors):
            return (
                f'{self.kind} in version "{self.version}" cannot be handled as a {self.kind}: '
                f"strict decoding error: {', '.join(self.messages)}"
            )
        listed = self.messages[0] if len(self.errors) == 1 else f"[{', '.join(self.messages)}]"
        return f'{self.kind}.{self.group} "{self.name}" is invalid: {listed}'


class CustomResourceValidator:
    """Offline admission for the custom resources of one CRD version."""

    def __init__(self, crd: Mapping[str, Any], version: str | None = None) -> None:
        spec = crd["spec"]
        versions = spec["versions"]
        chosen = next(
            (v for v in versions if v["name"] == version)
            if version
            else (v for v in versions if v.get("storage")),
            None,
        )
        if chosen is None:
            raise ValueError(f"CRD {crd['metadata']['name']} has no version {version!r}")
        self.group: str = spec["group"]
        self.version: str = chosen["name"]
        self.kind: str = spec["names"]["kind"]
        self.schema: Schema = chosen["schema"]["openAPIV3Schema"]
        self.has_status_subresource = "status" in (chosen.get("subresources") or {})

    @classmethod
    def from_file(cls, path: str | FilePath, version: str | None = None) -> CustomResourceValidator:
        return cls(yaml.safe_load(FilePath(path).read_text()), version)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def defaulted(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """``obj`` pruned and defaulted, as the API server would store it (no validation)."""
        out = copy.deepcopy(dict(obj))
        structural.prune(out, self.schema, root=True)
        structural.apply_defaults(out, self.schema, root=True)
        return out

    def validate_create(self, obj: Mapping[str, Any], *, strict: bool = True) -> ValidationResult:
        return self._admit(obj, None, Operation.CREATE, strict)

    def validate_update(
        self, obj: Mapping[str, Any], old: Mapping[str, Any], *, strict: bool = True
    ) -> ValidationResult:
        return self._admit(obj, old, Operation.UPDATE, strict)

    def validate_status_update(
        self, obj: Mapping[str, Any], old: Mapping[str, Any], *, strict: bool = True
    ) -> ValidationResult:
        return self._admit(obj, old, Operation.UPDATE_STATUS, strict)

    def _result(
        self,
        obj: Mapping[str, Any],
        found: list[FieldError],
        warnings: list[FieldError] | None = None,
    ) -> ValidationResult:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or meta.get("generateName") or "")
        return ValidationResult(
            self.kind,
            self.group,
            self.version,
            name,
            dict(obj),
            tuple(found),
            tuple(warnings or ()),
        )

    def _admit(
        self,
        obj: Mapping[str, Any],
        old: Mapping[str, Any] | None,
        operation: Operation,
        strict: bool,
    ) -> ValidationResult:
        new = copy.deepcopy(dict(obj))
        unknown = structural.prune(new, self.schema, root=True)
        if strict and unknown:
            return self._result(new, [FieldError(ErrorType.UNKNOWN_FIELD, p) for p in unknown])
        structural.apply_defaults(new, self.schema, root=True)
        stored_old = self.defaulted(old) if old is not None else None
        new = self._subresource_view(new, stored_old, operation)
        found = self._identity_errors(new)
        found += structural.schema_errors(
            new, self.schema, status_update=operation is Operation.UPDATE_STATUS
        )
        warnings: list[FieldError] = []
        if stored_old is not None:
            warnings = [e for e in found if _unchanged(self.schema, new, stored_old, e)]
            found = [e for e in found if e not in warnings]
        if any(e.type in errors.BLOCKING_TYPES for e in found):
            found.append(FieldError(ErrorType.INVALID, (), None, errors.CEL_SKIPPED_DETAIL))
        else:
            previous = stored_old if stored_old is not None else cel.MISSING
            outcome = cel.validate(self.schema, new, previous)
            found += outcome.errors
            warnings += outcome.warnings
        return self._result(new, found, warnings)

    def _subresource_view(
        self, new: dict[str, Any], old: dict[str, Any] | None, operation: Operation
    ) -> dict[str, Any]:
        if not self.has_status_subresource:
            return new
        if operation is Operation.UPDATE_STATUS and old is not None:
            merged = copy.deepcopy(old)
            merged.pop("status", None)
            if "status" in new:
                merged["status"] = new["status"]
            return merged
        new.pop("status", None)
        if operation is Operation.UPDATE and old is not None and "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        return new

    def _identity_errors(self, new: Mapping[str, Any]) -> list[FieldError]:
        found: list[FieldError] = []
        if new.get("apiVersion") != self.api_version:
            found.append(
                FieldError(
                    ErrorType.INVALID,
                    ("apiVersion",),
                    new.get("apiVersion"),
                    f"must be {self.api_version}",
                )
            )
        if new.get("kind") != self.kind:
            found.append(
                FieldError(ErrorType.INVALID, ("kind",), new.get("kind"), f"must be {self.kind}")
            )
        meta = new.get("metadata") or {}
        name = meta.get("name")
        if isinstance(name, str) and name and not _DNS1123_SUBDOMAIN.fullmatch(name):
            found.append(FieldError(ErrorType.INVALID, ("metadata", "name"), name, _NAME_DETAIL))
        if not meta.get("name") and not meta.get("generateName"):
            found.append(
                FieldError(
                    ErrorType.REQUIRED,
                    ("metadata", "name"),
                    errors.OMITTED,
                    "name or generateName is required",
                )
            )
        return found


_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_DETAIL = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
"""The API server's own check of every object's name, before the CRD's schema."""


def _unchanged(schema: Schema, new: Any, old: Any, error: FieldError) -> bool:
    """True if the value an error is about is the same in the old object (ratcheting)."""
    path: Path = error.path[:-1] if error.type is ErrorType.REQUIRED else error.path
    node: Schema | None = schema
    for part in path:
        if node is None:
            return False
        if isinstance(part, int):
            if not isinstance(new, list) or part >= len(new):
                return False
            item = new[part]
            old = cel.correlate(node, item, old)
            new = item
        else:
            new = new.get(part, cel.MISSING) if isinstance(new, dict) else cel.MISSING
            old = old.get(part, cel.MISSING) if isinstance(old, dict) else cel.MISSING
        node = structural.child_schema(node, part)
        if old is cel.MISSING and new is not cel.MISSING:
            return False
    return bool(old == new)
