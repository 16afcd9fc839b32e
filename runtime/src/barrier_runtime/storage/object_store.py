"""The object store seam: a flat namespace of immutable byte objects.

Checkpoint storage needs very little from a store, and all of it is here:

* ``put`` replaces an object atomically: a reader sees the old bytes or the new
  bytes, never a prefix of them;
* ``put_if_absent`` creates an object only if no object has that key, as one
  atomic step (S3 ``If-None-Match: *``, ``link(2)`` on a local disk); of two
  racing writers exactly one wins — this is what makes a checkpoint commit safe
  when two coordinators run by mistake;
* ``list`` is recursive and sorted; ``delete`` is idempotent;
* ``delete_incomplete`` removes the debris of writes that never finished
  (invisible to ``list``), for cleanups that run when no writer is left.

Keys are ``/``-separated relative paths (``default/job/checkpoints/chk-1/_metadata``);
they never start with ``/`` and contain no empty, ``.`` or ``..`` segments.
Implementations are thread-safe and raise only the named errors of
:mod:`barrier_runtime.storage.errors`. ``describe()`` names the store for error
messages and never contains a secret.

>>> import tempfile
>>> store = open_object_store(tempfile.mkdtemp())
>>> store.put_if_absent("a/b", b"1"), store.put_if_absent("a/b", b"2")
(True, False)
>>> store.get("a/b"), list(store.list("a/"))
(b'1', ['a/b'])
"""

from __future__ import annotations

import os
import pathlib
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from barrier_runtime.storage import errors, local
from barrier_runtime.storage.objects import ObjectInfo, is_temporary_name, validate_key

__all__ = [
    "ObjectInfo",
    "ObjectStore",
    "Timeouts",
    "is_temporary_name",
    "open_object_store",
    "store_url",
    "validate_key",
]

_S3_PARAMS = frozenset({"endpoint", "region", "create_bucket"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long an S3 store waits for its server (local stores ignore this).

    The defaults suit a running job; a check made before a job starts uses
    shorter ones so that an endpoint that does not answer is found in seconds.
    """

    connect: float = 60.0
    """Seconds to connect *and to send a request*: urllib3 sends a request's body under the
    connect timeout (the read timeout starts after it), so a large state object whose
    upload the server stalls on for longer fails unless this is as long as ``read``.
    (At 5 s, full checkpoints of 10 M keys failed against a busy embedded server.)"""
    read: float = 60.0
    retries: int = 3


class ObjectStore(Protocol):
    """A flat key → bytes store (local directory, S3 bucket prefix)."""

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, replacing any previous object atomically."""
        ...

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Create ``key`` only if it does not exist; ``False`` when it already did."""
        ...

    def get(self, key: str) -> bytes:
        """The object's bytes; :class:`~errors.ObjectNotFoundError` if there is none."""
        ...

    def stat(self, key: str) -> ObjectInfo | None:
        """The object's size, or ``None`` if it does not exist."""
        ...

    def list(self, prefix: str) -> Iterator[str]:
        """Every key starting with ``prefix`` (a plain string prefix), sorted."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``; removing a missing object is not an error."""
        ...

    def delete_many(self, keys: Iterable[str]) -> None:
        """Remove all ``keys`` (missing ones are ignored)."""
        ...

    def delete_incomplete(self, prefix: str) -> int:
        """Remove what writes that never finished left under ``prefix``; how many went.

        A writer killed mid-write leaves what ``list`` never shows: a local
        store's temporary file, an S3 bucket's incomplete multipart upload. Only
        for prefixes nothing is still writing to (a write in progress there
        would fail).
        """
        ...

    def describe(self) -> str:
        """Where the store is, for humans (``s3://bucket/prefix at http://…``)."""
        ...

    def describe_key(self, key: str) -> str:
        """One object's URL, for humans: ``s3://bucket/prefix/key``, ``file:///dir/key``
        (the store's endpoint is in :meth:`describe`)."""
        ...


def store_url(endpoint: str, bucket: str) -> str:
    """The :func:`open_object_store` URL of ``bucket`` at a job configuration's endpoint.

    ``file:///dir`` names a local directory holding the bucket as a sub-directory;
    ``http(s)://host:port`` an S3 endpoint; empty means AWS (or the environment's).
    The driver (``job.json``) and the operator (its checkpoint catalog) both use it.

    >>> store_url("file:///data", "b"), store_url("http://minio:9000", "b")
    ('/data/b', 's3://b?endpoint=http://minio:9000')
    """
    if endpoint.startswith("file://"):
        return str(pathlib.Path(endpoint[len("file://") :]) / bucket)
    if endpoint:
        return f"s3://{bucket}?endpoint={endpoint}"
    return f"s3://{bucket}"


def open_object_store(
    url: str,
    *,
    access_key: str | None = None,
    secret_key: str | None = None,
    create_bucket: bool = False,
    environ: Mapping[str, str] | None = None,
    timeouts: Timeouts | None = None,
) -> ObjectStore:
    """Open the store a URL names.

    * ``file:///abs/path`` or a plain path: a :class:`~local.LocalObjectStore`;
    * ``s3://bucket/prefix?endpoint=http://host:port&region=…&create_bucket=true``:
      an :class:`~s3.S3ObjectStore`. ``secure`` follows the endpoint's scheme;
      without ``endpoint`` the ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``
      variables or AWS itself are used. Credentials come from the arguments,
      else from ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (and
      ``AWS_SESSION_TOKEN``); the region from ``AWS_REGION`` /
      ``AWS_DEFAULT_REGION`` when the URL has none; ``timeouts`` bound each
      request (default :class:`Timeouts`).

    Opening does no I/O except creating the bucket when asked to.
    """
    env = os.environ if environ is None else environ
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    if scheme == "s3":
        return _open_s3(parsed, access_key, secret_key, create_bucket, env, timeouts or Timeouts())
    if scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise errors.InvalidStoreUrlError(
                f"store URL {url!r} names host {parsed.netloc!r}: file URLs must be "
                "file:///absolute/path"
            )
        return local.LocalObjectStore(pathlib.Path(urllib.parse.unquote(parsed.path)))
    if scheme == "":
        if not url:
            raise errors.InvalidStoreUrlError("the store URL is empty: give a path or s3:// URL")
        return local.LocalObjectStore(pathlib.Path(url).expanduser().resolve())
    raise errors.InvalidStoreUrlError(
        f"store URL {url!r} has unsupported scheme {parsed.scheme!r}: use "
        "s3://bucket/prefix?endpoint=…, file:///path or a plain path"
    )


def _open_s3(
    parsed: urllib.parse.SplitResult,
    access_key: str | None,
    secret_key: str | None,
    create_bucket: bool,
    env: Mapping[str, str],
    timeouts: Timeouts,
) -> ObjectStore:
    # Imported here: the minio client takes ~150 ms to import, and only S3 URLs need it.
    from barrier_runtime.storage import s3  # noqa: PLC0415

    shown = urllib.parse.urlunsplit(parsed._replace(query=""))
    if not parsed.netloc:
        raise errors.InvalidStoreUrlError(f"store URL {shown!r} names no bucket: use s3://bucket/…")
    params = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
    unknown = sorted(set(params) - _S3_PARAMS)
    if unknown:
        raise errors.InvalidStoreUrlError(
            f"store URL {shown!r} has unknown parameter(s) {', '.join(unknown)}: "
            f"known are {', '.join(sorted(_S3_PARAMS))}"
        )

    def param(name: str) -> str | None:
        values = params.get(name)
        return values[-1] if values else None

    endpoint = (
        param("endpoint")
        or env.get("AWS_ENDPOINT_URL_S3")
        or env.get("AWS_ENDPOINT_URL")
        or "https://s3.amazonaws.com"
    )
    key_id = access_key if access_key is not None else env.get("AWS_ACCESS_KEY_ID")
    secret = secret_key if secret_key is not None else env.get("AWS_SECRET_ACCESS_KEY")
    token = env.get("AWS_SESSION_TOKEN") if access_key is None else None
    return s3.S3ObjectStore(
        endpoint,
        parsed.netloc,
        urllib.parse.unquote(parsed.path).strip("/"),
        access_key=key_id or None,
        secret_key=secret or None,
        session_token=token or None,
        region=param("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
        create_bucket=create_bucket or _flag(param("create_bucket"), shown),
        connect_timeout=timeouts.connect,
        read_timeout=timeouts.read,
        retries=timeouts.retries,
    )


def _flag(value: str | None, shown: str) -> bool:
    if value is None:
        return False
    if value.lower() in _TRUE or value == "":
        return True
    if value.lower() in _FALSE:
        return False
    raise errors.InvalidStoreUrlError(
        f"store URL {shown!r}: create_bucket must be true or false, got {value!r}"
    )
