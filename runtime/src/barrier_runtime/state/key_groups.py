"""Key groups: the unit in which keyed state is partitioned, snapshotted and rescaled.

``key_group = stable_hash(key) % max_parallelism``. Subtask *i* of *P* owns a
contiguous range of key groups, so a restore at another parallelism only
re-assigns ranges. The hash must be identical in every process and every
run, so Python's salted ``hash()`` is never used.

>>> key_group_for("user-1", 128) == key_group_for("user-1", 128)
True
>>> key_group_range(0, 3, 128), key_group_range(2, 3, 128)
((0, 42), (86, 127))
>>> subtask_for_key_group(42, 3, 128), subtask_for_key_group(43, 3, 128)
(0, 1)
"""

from __future__ import annotations

import hashlib


def stable_hash(key: str | int | bytes) -> int:
    """A 64-bit hash of ``key`` that is the same in every process and run."""
    if isinstance(key, bytes):
        data = b"b" + key
    elif isinstance(key, bool) or not isinstance(key, str | int):
        raise TypeError(f"keys must be str, int or bytes, got {type(key).__name__}: {key!r}")
    elif isinstance(key, int):
        data = b"i" + str(key).encode()
    else:
        data = b"s" + key.encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def key_group_for(key: str | int | bytes, max_parallelism: int) -> int:
    return stable_hash(key) % max_parallelism


def key_group_range(subtask: int, parallelism: int, max_parallelism: int) -> tuple[int, int]:
    """The inclusive key-group range owned by ``subtask``."""
    if not 0 <= subtask < parallelism <= max_parallelism:
        raise ValueError(
            f"subtask {subtask} of parallelism {parallelism} (max {max_parallelism}) is invalid"
        )
    start = (subtask * max_parallelism + parallelism - 1) // parallelism
    end = ((subtask + 1) * max_parallelism + parallelism - 1) // parallelism - 1
    return start, end


def subtask_for_key_group(key_group: int, parallelism: int, max_parallelism: int) -> int:
    """The subtask whose range contains ``key_group``."""
    return key_group * parallelism // max_parallelism
