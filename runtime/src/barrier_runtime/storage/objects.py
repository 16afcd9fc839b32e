"""What every object store adapter shares: well-formed keys and what ``stat`` returns.

The seam itself (:class:`~barrier_runtime.storage.object_store.ObjectStore`)
and the URL opener live in :mod:`barrier_runtime.storage.object_store`, which
imports the adapters; the adapters (``local``, ``s3``) import only this module,
so the storage package has no import circle.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """What ``stat`` knows about an existing object."""

    size: int


def validate_key(key: str) -> str:
    """Return ``key`` if it is a well-formed object key, else raise ``ValueError``.

    >>> validate_key("jobs/a/chk-1/_metadata")
    'jobs/a/chk-1/_metadata'
    >>> validate_key("../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: invalid object key '../etc/passwd': ...
    """
    parts = key.split("/")
    bad = (
        not key
        or "\\" in key
        or "\x00" in key
        or any(p in ("", ".", "..") for p in parts)
        or is_temporary_name(parts[-1])
    )
    if bad:
        raise ValueError(
            f"invalid object key {key!r}: use '/'-separated names without empty, '.' or '..' parts"
        )
    return key


def is_temporary_name(name: str) -> bool:
    """Whether a file name is a local store's in-flight temporary file."""
    return name.startswith(".") and name.endswith(".tmp")
