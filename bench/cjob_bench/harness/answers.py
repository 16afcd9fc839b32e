"""Reading each system's final per-key answer and checking it: a fast wrong answer is no result.

An answer is an int64 array indexed by key, -1 where a key never appeared.
Every output of the suite's workloads is a running total per key, so the
final answer is the largest value seen for each key.

>>> import numpy as np
>>> check(np.array([3, -1, 2]), np.array([3, 0, 2]))
{'equal': True, 'keys_checked': 3, 'keys_wrong': 0}
>>> check(np.array([3, 1]), np.array([3, 2]))["equal"]
False
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def check(got: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    """All keys: a key with no output must have an expected value of 0."""
    got = np.where(got < 0, 0, got)
    wrong = int(np.count_nonzero(got != expected))
    return {"equal": wrong == 0, "keys_checked": int(expected.size), "keys_wrong": wrong}


def empty(keys: int) -> np.ndarray:
    return np.full(keys, -1, dtype=np.int64)


def merge_max(into: np.ndarray, keys: Any, values: Any) -> None:
    np.maximum.at(into, np.asarray(keys, dtype=np.int64), np.asarray(values, dtype=np.int64))


def from_jsonl_files(directory: pathlib.Path, keys: int, *, value: str) -> np.ndarray:
    """Every ``*.json``/``*.jsonl`` file under ``directory`` (hidden ``_``/``.`` parts skipped)."""
    got = empty(keys)
    for path in sorted(directory.rglob("*.json*")):
        if any(part.startswith(("_", ".")) for part in path.relative_to(directory).parts):
            continue
        ks, vs = [], []
        for line in path.read_text().splitlines():
            if line:
                r = json.loads(line)
                ks.append(r["key"])
                vs.append(r[value])
        if ks:
            merge_max(got, ks, vs)
    return got


def from_parquet_files(directory: pathlib.Path, keys: int, *, value: str) -> np.ndarray:
    got = empty(keys)
    for path in sorted(directory.rglob("*.parquet")):
        table: pa.Table = pq.read_table(path, columns=["key", value])
        if table.num_rows:
            merge_max(got, table.column("key").to_numpy(), table.column(value).to_numpy())
    return got
