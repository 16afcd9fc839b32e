"""Named storage failures. Each message says what broke and what to do about it."""

from __future__ import annotations

from barrier_runtime.core import store_errors


class StorageError(store_errors.MetadataStoreError):
    """The checkpoint store could not do what was asked."""


class StorageUnavailableError(StorageError):
    """The store cannot be reached (server down, wrong endpoint, network)."""


class StorageAccessDeniedError(StorageError):
    """The store refused our credentials or the bucket is not ours."""


class ObjectNotFoundError(StorageError):
    """An object that should exist does not."""


class CheckpointAlreadyExistsError(StorageError, store_errors.CheckpointIdTakenError):
    """Another writer already committed this checkpoint id (conditional put lost)."""


class CorruptCheckpointError(StorageError):
    """A checkpoint's metadata or one of its objects fails verification."""


class NoUsableCheckpointError(StorageError):
    """Checkpoints exist but none can be restored; starting empty would lose state."""


class InvalidStoreUrlError(StorageError, ValueError):
    """A store URL or one of its settings cannot be understood."""


class BucketNotFoundError(StorageError):
    """The configured S3 bucket does not exist (and creating it was not asked for)."""


class CheckpointNotFoundError(StorageError):
    """An explicitly requested checkpoint or savepoint is not in the store."""


class EmbeddedServerError(StorageError):
    """The embedded S3 server (SeaweedFS ``weed mini``) could not be started."""


class StoreNotFoundError(StorageError):
    """The store a command should inspect does not exist (a mistyped path or bucket)."""


class JobNotFoundError(StorageError):
    """The store holds nothing for the named job (a mistyped job name or store)."""
