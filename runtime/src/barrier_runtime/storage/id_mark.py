"""The highest checkpoint id a job has used, kept after that checkpoint's directory is gone.

Checkpoint ids strictly increase across restarts and drivers: a driver starts
after the highest id found in the store. Directories alone cannot carry that
promise once something deletes the newest of them: the driver's clean-up of
checkpoints that never completed, or ``cjob checkpoints delete`` of the newest
one. A later driver would then hand out an id again, and whatever the first
checkpoint of that id left elsewhere (a sink's staged part files are named
after their checkpoint) could be taken for the second one's.

So before a deletion takes away the highest id in the store, the id is written
to one small object beside the checkpoints, ``checkpoints/_highest_id``
(``{"highest_id": n}``), raised, never lowered; the job's high-water mark is
the larger of it and the highest directory. Deletions of older directories
(retention, every checkpoint) never touch it.

>>> import tempfile
>>> from barrier_runtime.storage import object_store
>>> store = object_store.open_object_store(tempfile.mkdtemp())
>>> read(store, "job/checkpoints/_highest_id")
0
>>> raise_to(store, "job/checkpoints/_highest_id", 14)
>>> raise_to(store, "job/checkpoints/_highest_id", 9)
>>> read(store, "job/checkpoints/_highest_id")
14
"""

from __future__ import annotations

import json

from barrier_runtime.storage import errors, object_store

NAME = "checkpoints/_highest_id"
"""The mark's key, relative to the job's root."""


def read(store: object_store.ObjectStore, key: str) -> int:
    """The id recorded at ``key``; 0 when there is none."""
    try:
        raw = store.get(key)
    except errors.ObjectNotFoundError:
        return 0
    try:
        value = json.loads(raw)["highest_id"]
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.CorruptCheckpointError(
            f"{store.describe_key(key)} does not hold a checkpoint id ({exc}): it records the "
            "highest checkpoint id the job used; delete it only if no checkpoint of the job "
            'was ever deleted, or write {"highest_id": N} with N at least that id'
        ) from exc
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise errors.CorruptCheckpointError(
            f"{store.describe_key(key)} holds {value!r}, not a checkpoint id: write "
            '{"highest_id": N} with N the highest checkpoint id the job used'
        )
    return value


def raise_to(store: object_store.ObjectStore, key: str, checkpoint_id: int) -> None:
    """Record ``checkpoint_id`` at ``key`` unless a higher id is recorded already."""
    if read(store, key) < checkpoint_id:
        store.put(key, json.dumps({"highest_id": checkpoint_id}).encode())
