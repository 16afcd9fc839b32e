"""The benchmark's records and its one stateless transform, shared by every system.

Record ``i`` (0-based, in production order) is JSON with its global index, its key
(``k{i mod keys}``), its per-key sequence number (``i div keys``), the producer's timestamp
``ts`` (microseconds since the epoch, taken when the record is handed to the producer) and a
fixed payload. It goes to partition ``i mod P``. The transform keeps ``i``, ``key``, ``seq``,
``ts`` and replaces the payload by its length (``payload_len``): parse, light work, serialise.

>>> import json
>>> value = encode(7, keys=5, ts_us=1_000)
>>> transform(json.loads(value))
{'i': 7, 'key': 'k2', 'seq': 1, 'ts': 1000, 'payload_len': 64}
"""

from __future__ import annotations

from cjob_bench.workloads.w4_kafka.pipeline import transform

__all__ = ["PAYLOAD", "encode", "key_of", "transform"]

PAYLOAD = "x" * 64
"""The same payload in every record."""


def key_of(i: int, keys: int) -> str:
    return f"k{i % keys}"


def encode(i: int, *, keys: int, ts_us: int) -> bytes:
    """Record ``i``'s value, stamped with ``ts_us``."""
    return (
        f'{{"i":{i},"key":"k{i % keys}","seq":{i // keys},"ts":{ts_us},"payload":"{PAYLOAD}"}}'
    ).encode()
