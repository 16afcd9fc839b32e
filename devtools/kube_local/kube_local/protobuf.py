"""Decoding the protobuf request bodies that typed Go clients send.

kubectl's ``create namespace|configmap|secret|serviceaccount|token`` and Helm's
release storage (Secrets) send ``application/vnd.kubernetes.protobuf`` bodies:
the magic ``k8s\\0`` then a ``runtime.Unknown`` (1: TypeMeta, 2: raw, …) whose raw
bytes are the Go type's message. Only the kinds below are decoded, with the fields
listed (from k8s.io/api's generated.proto); other kinds get 415, and answers are
always JSON (clients decode by the response's content type).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from kube_local import errors

Schema = Mapping[int, tuple[str, Any]]

OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    7: ("generation", "int"),
    11: ("labels", "map"),
    12: ("annotations", "map"),
    14: ("finalizers", "strings"),
}
KINDS: Mapping[str, Schema] = {
    "Secret": {
        1: ("metadata", OBJECT_META),
        2: ("data", "bytesmap"),
        3: ("type", "string"),
        4: ("stringData", "map"),
        5: ("immutable", "bool"),
    },
    "ConfigMap": {
        1: ("metadata", OBJECT_META),
        2: ("data", "map"),
        3: ("binaryData", "bytesmap"),
        4: ("immutable", "bool"),
    },
    "Namespace": {1: ("metadata", OBJECT_META)},
    "ServiceAccount": {1: ("metadata", OBJECT_META), 4: ("automountServiceAccountToken", "bool")},
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int"),
        4: ("propagationPolicy", "string"),
        5: ("dryRun", "strings"),
    },
    "TokenRequest": {1: ("metadata", OBJECT_META)},
    "SelfSubjectAccessReview": {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: (
                    "resourceAttributes",
                    {
                        1: ("namespace", "string"),
                        2: ("verb", "string"),
                        3: ("group", "string"),
                        4: ("version", "string"),
                        5: ("resource", "string"),
                        6: ("subresource", "string"),
                        7: ("name", "string"),
                    },
                ),
                2: ("nonResourceAttributes", {1: ("path", "string"), 2: ("verb", "string")}),
            },
        ),
    },
}
_UNKNOWN: Schema = {
    1: ("typeMeta", {1: ("apiVersion", "string"), 2: ("kind", "string")}),
    2: ("raw", "raw"),
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    found: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            found.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            found.append((number, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise errors.bad_request(f"unsupported protobuf wire type {wire}")
    return found


def _entry(raw: bytes) -> tuple[str, bytes]:
    parts = dict(_fields(raw))
    key, value = parts.get(1, b""), parts.get(2, b"")
    assert isinstance(key, bytes) and isinstance(value, bytes)
    return key.decode(), value


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(value, int):
            obj[name] = bool(value) if kind == "bool" else value
        elif kind == "string":
            obj[name] = value.decode()
        elif kind == "raw":
            obj[name] = value
        elif kind == "strings":
            obj.setdefault(name, []).append(value.decode())
        elif kind in ("map", "bytesmap"):
            key, item = _entry(value)
            obj.setdefault(name, {})[key] = (
                item.decode() if kind == "map" else base64.b64encode(item).decode()
            )
        elif isinstance(kind, Mapping):
            obj[name] = decode_message(value, kind)
    return obj


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object as the JSON-shaped dict the rest of the server uses."""
    if not body.startswith(b"k8s\x00"):
        raise errors.bad_request("a protobuf body must start with the k8s magic")
    unknown = decode_message(body[4:], _UNKNOWN)
    meta = unknown.get("typeMeta", {})
    schema = KINDS.get(meta.get("kind", ""))
    if schema is None:
        raise errors.ApiError(
            415,
            "UnsupportedMediaType",
            f"kube-local decodes protobuf only for {', '.join(KINDS)}; "
            f"send {meta.get('kind', 'this object')} as JSON "
            "(e.g. kubectl apply -f)",
        )
    obj = decode_message(unknown.get("raw", b""), schema)
    return {"apiVersion": meta.get("apiVersion", ""), "kind": meta.get("kind", ""), **obj}
