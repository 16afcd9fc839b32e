"""An object store in an S3 bucket prefix (MinIO, SeaweedFS, AWS), on the ``minio`` SDK.

Conditional create. ``put_if_absent`` sends ``If-None-Match: *`` as a real
request header; the server answers 412 ``PreconditionFailed`` when the key
exists, which becomes ``False``. The SDK's ``put_object`` would turn extra
headers into ``x-amz-meta-*`` metadata (no condition at all), so the request
goes through the client's signed ``_execute`` call instead.

One request per object. ``put`` sends an object of up to 5 GiB (S3's largest single
PUT) as one ``PutObject``, never as a multipart upload: a writer killed halfway
leaves nothing, on every server. A multipart upload killed halfway leaves parts
that no listing shows, which ``delete_incomplete`` finds by listing the uploads
under a prefix; MinIO lists uploads of one exact key only (it expires stale ones
itself, after 24 h by default), so there the debris of a killed multipart writer
would stay. Only objects above 5 GiB still go in parts.

Retries. Transient failures (connection errors, 5xx, ``SlowDown``) are retried
a bounded number of times with backoff by the HTTP pool. A conditional put is
retried only when the connection could not be opened (the request was never
sent): re-sending a request whose answer was lost could turn our own success
into a 412. A caller that needs to tell "lost the race" from "won, but the
answer was lost" reads the object back (see ``CheckpointStore.commit``).

Errors. Every SDK or network failure becomes a named error with one sentence:
rejected credentials → :class:`~errors.StorageAccessDeniedError`, unreachable
endpoint or a failing server → :class:`~errors.StorageUnavailableError`,
missing key → :class:`~errors.ObjectNotFoundError`, missing bucket →
:class:`~errors.BucketNotFoundError`. Secrets never appear in messages.

The minio client and urllib3 pools are thread-safe, and so is this store.
"""

from __future__ import annotations

import contextlib
import io
import os
import urllib.parse
from collections.abc import Iterable, Iterator

import certifi
import urllib3
from minio import Minio
from minio import error as minio_error
from minio import helpers as minio_helpers
from minio.deleteobjects import DeleteObject

from barrier_runtime.storage import errors, objects

_ACCESS_CODES = frozenset(
    {
        "AccessDenied",
        "AccountProblem",
        "AllAccessDisabled",
        "ExpiredToken",
        "InvalidAccessKeyId",
        "InvalidToken",
        "SignatureDoesNotMatch",
    }
)
_BUSY_CODES = frozenset({"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout"})
_MISSING_KEY_CODES = frozenset({"NoSuchKey", "NoSuchObject"})
_RETRY_STATUS = (429, 500, 502, 503, 504)
_SINGLE_PUT_LIMIT = 5 * 1024**3
"""S3's largest object in one PutObject; larger ones are multipart uploads."""
_MAX_UPLOAD_LISTINGS = 100
"""Pages of incomplete uploads aborted at most in one cleanup (1000 each)."""


class S3ObjectStore:
    """Objects under ``prefix`` in ``bucket`` at ``endpoint`` (``http(s)://host:port``).

    >>> store = S3ObjectStore("http://127.0.0.1:8333", "checkpoints", "team-a/")
    >>> store.describe()
    's3://checkpoints/team-a at http://127.0.0.1:8333'
    >>> store.describe_key("in/a.jsonl")
    's3://checkpoints/team-a/in/a.jsonl'
    """

    def __init__(
        self,
        endpoint: str,
        bucket: str,
        prefix: str = "",
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        region: str | None = None,
        create_bucket: bool = False,
        connect_timeout: float = 60.0,
        read_timeout: float = 60.0,
        retries: int = 3,
    ) -> None:
        self._endpoint, netloc, secure = _parse_endpoint(endpoint)
        try:
            minio_helpers.check_bucket_name(bucket, strict=True)
        except ValueError as exc:
            raise errors.InvalidStoreUrlError(
                f"{bucket!r} is not a valid S3 bucket name: use 3-63 lowercase letters, "
                "digits, dots and hyphens"
            ) from exc
        self._bucket = bucket
        self._prefix = prefix.strip("/")
        if self._prefix:
            objects.validate_key(self._prefix)
        timeout = urllib3.Timeout(connect=connect_timeout, read=read_timeout)
        retrying = urllib3.Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            status_forcelist=_RETRY_STATUS,
            backoff_factor=0.2,
            allowed_methods=None,
            raise_on_status=False,
        )
        connect_only = urllib3.Retry(
            total=retries,
            connect=retries,
            read=0,
            status=0,
            other=0,
            redirect=0,
            backoff_factor=0.2,
            allowed_methods=None,
            raise_on_status=False,
        )

        def client(retry: urllib3.Retry) -> Minio:
            return Minio(
                netloc,
                access_key=access_key,
                secret_key=secret_key,
                session_token=session_token,
                secure=secure,
                region=region,
                http_client=_pool(timeout, retry),
            )

        self._client = client(retrying)
        self._conditional = client(connect_only)
        if create_bucket:
            self.ensure_bucket()

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def prefix(self) -> str:
        return self._prefix

    def url(self) -> str:
        """The URL :func:`~object_store.open_object_store` opens this store from (no secrets)."""
        path = f"/{urllib.parse.quote(self._prefix)}" if self._prefix else ""
        return f"s3://{self._bucket}{path}?endpoint={self._endpoint}"

    def describe(self) -> str:
        where = f"s3://{self._bucket}/{self._prefix}" if self._prefix else f"s3://{self._bucket}"
        return f"{where} at {self._endpoint}"

    def describe_key(self, key: str) -> str:
        name = f"{self._prefix}/{key}" if self._prefix else key
        return f"s3://{self._bucket}/{name}"

    def ensure_bucket(self) -> None:
        """Create the bucket unless it exists (safe when several callers race)."""
        with self._translated("create the bucket", None):
            if self._client.bucket_exists(self._bucket):
                return
            try:
                self._client.make_bucket(self._bucket)
            except minio_error.S3Error as exc:
                if exc.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise

    def put(self, key: str, data: bytes) -> None:
        with self._translated("write", key):
            if len(data) > _SINGLE_PUT_LIMIT:
                self._client.put_object(self._bucket, self._full(key), io.BytesIO(data), len(data))
                return
            headers: dict[str, str | list[str] | tuple[str]] = {
                "Content-Type": "application/octet-stream"
            }
            self._client._put_object(self._bucket, self._full(key), data, headers)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        headers: dict[str, str | list[str] | tuple[str]] = {
            "If-None-Match": "*",
            "Content-Type": "application/octet-stream",
        }
        with self._translated("write", key):
            try:
                response = self._conditional._execute(
                    "PUT", self._bucket, self._full(key), body=data, headers=headers
                )
            except minio_error.S3Error as exc:
                if exc.code == "PreconditionFailed" or exc.response.status == 412:
                    return False
                raise
            response.release_conn()
            return True

    def get(self, key: str) -> bytes:
        with self._translated("read", key):
            response = self._client.get_object(self._bucket, self._full(key))
            try:
                return bytes(response.read())
            finally:
                response.close()
                response.release_conn()

    def stat(self, key: str) -> objects.ObjectInfo | None:
        try:
            with self._translated("inspect", key):
                info = self._client.stat_object(self._bucket, self._full(key))
        except errors.ObjectNotFoundError:
            return None
        return objects.ObjectInfo(size=int(info.size or 0))

    def list(self, prefix: str) -> Iterator[str]:
        root = f"{self._prefix}/" if self._prefix else ""
        with self._translated("list", prefix or "/"):
            found = self._client.list_objects(self._bucket, prefix=root + prefix, recursive=True)
            keys = [o.object_name[len(root) :] for o in found if not o.is_dir]
        return iter(sorted(keys))

    def delete(self, key: str) -> None:
        try:
            with self._translated("delete", key):
                self._client.remove_object(self._bucket, self._full(key))
        except errors.ObjectNotFoundError:
            pass

    def delete_many(self, keys: Iterable[str]) -> None:
        targets = [DeleteObject(self._full(k)) for k in keys]
        if not targets:
            return
        with self._translated("delete", f"{len(targets)} objects"):
            for failure in self._client.remove_objects(self._bucket, targets):
                if failure.code in _MISSING_KEY_CODES:
                    continue
                raise self._from_code(failure.code, failure.message, "delete", failure.name)

    def delete_incomplete(self, prefix: str) -> int:
        """Abort the multipart uploads under ``prefix`` that were never completed (a
        ``put`` above 5 GiB whose writer was killed): S3 keeps their parts, invisible
        to listings, until then. MinIO lists uploads by exact key only: none are found
        there (see the module's docstring)."""
        full = f"{self._prefix}/{prefix}" if self._prefix else prefix
        removed = 0
        with self._translated("clean up", prefix or "/"):
            for _ in range(_MAX_UPLOAD_LISTINGS):
                found = self._client._list_multipart_uploads(self._bucket, prefix=full)
                for upload in found.uploads:
                    if upload.object_name and upload.upload_id:
                        self._client._abort_multipart_upload(
                            self._bucket, upload.object_name, upload.upload_id
                        )
                        removed += 1
                if not found.uploads or not found.is_truncated:
                    break
        return removed

    # -- internals ---------------------------------------------------------

    def _full(self, key: str) -> str:
        objects.validate_key(key)
        return f"{self._prefix}/{key}" if self._prefix else key

    @contextlib.contextmanager
    def _translated(self, action: str, key: str | None) -> Iterator[None]:
        try:
            yield
        except errors.StorageError:
            raise
        except minio_error.S3Error as exc:
            raise self._from_code(exc.code or "", exc.message, action, key) from exc
        except minio_error.ServerError as exc:
            raise errors.StorageUnavailableError(
                f"S3 at {self._endpoint} failed with HTTP {exc.status_code} while trying to "
                f"{action} {key or ''} in {self.describe()}: the server is failing; try again"
            ) from exc
        except minio_error.InvalidResponseError as exc:
            raise errors.StorageError(
                f"{self._endpoint} answered a request to {action} {key or ''} with something "
                "that is not an S3 response: check that the endpoint is an S3 server"
            ) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.StorageUnavailableError(
                f"cannot reach S3 at {self._endpoint} ({_network_reason(exc)}): check that "
                "the server is running and the endpoint is right"
            ) from exc

    def _from_code(
        self, code: str, message: str | None, action: str, key: str | None
    ) -> errors.StorageError:
        if code in _ACCESS_CODES:
            return errors.StorageAccessDeniedError(
                f"S3 rejected the credentials for s3://{self._bucket} at {self._endpoint} "
                f"({code}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket policy"
            )
        if code in _MISSING_KEY_CODES:
            return errors.ObjectNotFoundError(f"object {key} does not exist in {self.describe()}")
        if code == "NoSuchBucket":
            return errors.BucketNotFoundError(
                f"bucket {self._bucket} does not exist at {self._endpoint}: check the bucket "
                "name, or create it (create_bucket=true in the store URL does)"
            )
        if code in _BUSY_CODES:
            return errors.StorageUnavailableError(
                f"S3 at {self._endpoint} could not {action} {key or ''} ({code}): the server is "
                "busy or failing; try again"
            )
        return errors.StorageError(
            f"S3 at {self._endpoint} refused to {action} {key or ''} in {self.describe()} "
            f"({code}: {message or 'no message'})"
        )


def _parse_endpoint(endpoint: str) -> tuple[str, str, bool]:
    """``(normalised URL, host:port, secure)`` of an endpoint given with or without scheme."""
    raw = endpoint if "://" in endpoint else f"https://{endpoint}"
    parsed = urllib.parse.urlsplit(raw)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise errors.InvalidStoreUrlError(
            f"S3 endpoint {endpoint!r} must look like http://host:port or https://host"
        )
    if parsed.path.strip("/") or parsed.query or parsed.username or parsed.password:
        raise errors.InvalidStoreUrlError(
            f"S3 endpoint {parsed.scheme}://{parsed.hostname} must be scheme://host[:port] only "
            "(no path, query or credentials; give credentials separately)"
        )
    return f"{parsed.scheme}://{parsed.netloc}", parsed.netloc, parsed.scheme == "https"


def _pool(timeout: urllib3.Timeout, retries: urllib3.Retry) -> urllib3.PoolManager:
    return urllib3.PoolManager(
        timeout=timeout,
        retries=retries,
        maxsize=32,
        cert_reqs="CERT_REQUIRED",
        ca_certs=os.environ.get("SSL_CERT_FILE") or certifi.where(),
    )


def _network_reason(exc: BaseException) -> str:
    """A few words on why a connection failed, from urllib3's nested exceptions."""
    reason: BaseException = exc
    while isinstance(reason, urllib3.exceptions.MaxRetryError) and reason.reason is not None:
        reason = reason.reason
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "the host name does not resolve"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):  # before its base class
        return "connection refused" if "refused" in str(reason).lower() else "cannot connect"
    if isinstance(reason, urllib3.exceptions.ConnectTimeoutError):
        return "connecting timed out"
    if isinstance(reason, urllib3.exceptions.ReadTimeoutError):
        return "the server did not answer in time"
    if isinstance(reason, urllib3.exceptions.SSLError):
        return "TLS handshake failed"
    if isinstance(reason, urllib3.exceptions.ProtocolError | ConnectionError):
        return "the connection was dropped"
    return type(reason).__name__
