"""Counter-based random draws: every value is a pure function of (seed, event id, slot).

The reference seeds a fresh ``java.util.Random`` with each event's id, so an
event's fields do not depend on which events were generated before it. We keep
that property with a hash instead of a sequential generator (a SplitMix64
finaliser of the seed, the event id and a slot number, one slot per field), so
any range of events can be generated alone, in any batch size, in one numpy
pass per field, and give the same bytes.

Random strings are slices of a fixed pool of random letters (made once per
seed): a string's start in the pool is itself a draw, so its text is a function
of the event too.

>>> ids = np.arange(5, dtype=np.int64)
>>> bool((uniform_ints(7, ids, slot=1, bound=10) == uniform_ints(7, ids, 1, 10)).all())
True
>>> bool((uniform_ints(7, ids, 1, 10) != uniform_ints(7, ids, 2, 10)).any())
True
>>> strings(7, ids[:2], slot=3, lengths=np.array([3, 4])).to_pylist() == \\
...     strings(7, ids[1::-1], slot=3, lengths=np.array([4, 3])).to_pylist()[::-1]
True
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
import pyarrow as pa

Ints = npt.NDArray[np.int64]
Words = npt.NDArray[np.uint64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SLOTS = 64
POOL_BYTES = 1 << 20
"""Letters in a string pool; a string is at most a few hundred of them."""


def words(seed: int, event_ids: Ints, slot: int) -> Words:
    """One uniform 64-bit word per event id for field ``slot`` (0 <= slot < 64)."""
    if not 0 <= slot < _SLOTS:
        raise ValueError(f"slot must be in [0, {_SLOTS}), got {slot}")
    with np.errstate(over="ignore"):
        x = (event_ids.astype(np.uint64) * np.uint64(_SLOTS) + np.uint64(slot)) * _GOLDEN
        x ^= np.uint64(seed & 0xFFFF_FFFF_FFFF_FFFF) * np.uint64(0xD1B54A32D192ED03)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return np.asarray(x ^ (x >> np.uint64(31)), dtype=np.uint64)


def uniform_ints(seed: int, event_ids: Ints, slot: int, bound: Ints | int) -> Ints:
    """Uniform integers in ``[0, bound)`` (``bound`` per event or one for all; >= 1)."""
    high = words(seed, event_ids, slot) >> np.uint64(11)  # 53 bits: exact in float64 too
    return np.asarray(high % np.asarray(bound, dtype=np.uint64), dtype=np.int64)


def uniform_doubles(seed: int, event_ids: Ints, slot: int) -> npt.NDArray[np.float64]:
    """Uniform doubles in ``[0, 1)``."""
    high = words(seed, event_ids, slot) >> np.uint64(11)
    return np.asarray(high.astype(np.float64) * 2.0**-53, dtype=np.float64)


@functools.lru_cache(maxsize=4)
def _pool(seed: int, spaces: bool) -> npt.NDArray[np.uint8]:
    """Random lowercase letters (and, with ``spaces``, one space in 13, as the reference)."""
    rng = np.random.default_rng([seed, int(spaces)])
    letters = rng.integers(ord("a"), ord("z") + 1, POOL_BYTES, dtype=np.uint8)
    if spaces:
        letters[rng.integers(0, 13, POOL_BYTES) == 0] = ord(" ")
    letters.flags.writeable = False
    return letters


def strings(
    seed: int, event_ids: Ints, slot: int, lengths: Ints, *, spaces: bool = False
) -> pa.StringArray:
    """One random string per event id, of the given lengths (each < 1 KiB)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    pool = _pool(seed, spaces)
    starts = uniform_ints(seed, event_ids, slot, POOL_BYTES - 1024)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    shift = np.repeat(starts - offsets[:-1], lengths)
    data = pool[shift + np.arange(int(offsets[-1]), dtype=np.int64)]
    if offsets[-1] < 2**31:
        return pa.StringArray.from_buffers(
            len(lengths), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)
        )
    raise ValueError("strings: more than 2 GiB of text in one batch; generate smaller ranges")
