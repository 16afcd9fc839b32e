"""The errors of the checkpoint coordinator's metadata-store port.

The commit protocol (:mod:`barrier_runtime.checkpoint.commit`) talks to its
store through :class:`barrier_runtime.checkpoint.protocols.MetadataStore` and
knows its failures only by these two classes. Store adapters raise them: the
named errors of :mod:`barrier_runtime.storage.errors` derive from them, so the
coordinator never imports a storage package.
"""

from __future__ import annotations


class MetadataStoreError(Exception):
    """The metadata store could not commit or prune checkpoints; retry when it is reachable."""


class CheckpointIdTakenError(MetadataStoreError):
    """Another writer already committed this checkpoint id; is a second driver running?"""
