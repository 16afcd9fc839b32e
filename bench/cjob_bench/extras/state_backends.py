"""Benchmark: embedded on-disk stores as a keyed state backend (issue 32, choosing one).

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run state-backends \\
        [--keys 5000000] [--budget-mib 256]

One worker's share of state-scale's workload (10 M keys of 100 bytes at P = 2: 5 M keys,
1 % of all keys updated per second: 50,000 updates per second per worker), run against
each candidate in a fresh subprocess, with the memory budget given to its caches. The
method, fixed before measuring:

* **load**: every key written once, in batches of 65,536 (one write batch or
  transaction each: what a barrier's flush of dirty entries does);
* **rounds**: ``--rounds`` times, 50,000 random keys rewritten in one batch, then the
  *synchronous part of a snapshot* (what the task thread would wait for at a barrier:
  RocksDB's checkpoint of hard links, LMDB's read transaction, SQLite's read
  transaction in WAL mode), then the next round's writes go on while the snapshot is held;
* **base**: the cost of turning the held snapshot into files to upload (RocksDB: none,
  its checkpoint's files are immutable; LMDB: ``copy`` of the environment from the read
  snapshot; SQLite: the backup API), and those files' bytes;
* **reads**: 100,000 random point reads (``get``) after the rounds;
* memory: the process's peak RSS, anonymous and file-backed apart (LMDB maps its file,
  so the kernel counts its cached pages in RSS although they are reclaimable), and the
  store's bytes on disk.

Values are raw bytes (no pickle: RocksDB runs in ``raw_mode``). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, Protocol

import lmdb
import numpy as np
import rocksdict

from cjob_bench.harness import machine

CANDIDATES = ("rocksdict", "lmdb", "sqlite")
BATCH = 65_536


class Store(Protocol):
    def write(self, keys: list[bytes], values: list[bytes]) -> None: ...
    def get(self, key: bytes) -> bytes | None: ...
    def hold_snapshot(self, where: pathlib.Path) -> None: ...
    def export_base(self, where: pathlib.Path) -> None: ...
    def release(self) -> None: ...
    def close(self) -> None: ...


class Rocks:
    def __init__(self, path: pathlib.Path, budget: int) -> None:
        opts = rocksdict.Options(raw_mode=True)
        opts.create_if_missing(True)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(budget // 2))
        table.set_cache_index_and_filter_blocks(True)
        table.set_bloom_filter(10, False)
        opts.set_block_based_table_factory(table)
        opts.set_write_buffer_size(budget // 8)
        opts.set_max_write_buffer_number(2)
        self._db = rocksdict.Rdict(str(path / "db"), opts)

    def write(self, keys: list[bytes], values: list[bytes]) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for k, v in zip(keys, values, strict=True):
            batch.put(k, v)
        self._db.write(batch)

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value

    def hold_snapshot(self, where: pathlib.Path) -> None:
        rocksdict.Checkpoint(self._db).create_checkpoint(str(where))

    def export_base(self, where: pathlib.Path) -> None:
        """Nothing to write: the checkpoint's SST files are immutable and uploaded as they are."""

    def release(self) -> None:
        pass  # the checkpoint directory is removed by the caller

    def close(self) -> None:
        self._db.close()


class Lmdb:
    def __init__(self, path: pathlib.Path, budget: int) -> None:
        self._env = lmdb.open(str(path / "db"), map_size=1 << 36, writemap=False, sync=False)
        self._txn: Any = None

    def write(self, keys: list[bytes], values: list[bytes]) -> None:
        with self._env.begin(write=True) as txn:
            cursor = txn.cursor()
            cursor.putmulti(zip(keys, values, strict=True))

    def get(self, key: bytes) -> bytes | None:
        with self._env.begin(buffers=False) as txn:
            value: bytes | None = txn.get(key)
            return value

    def hold_snapshot(self, where: pathlib.Path) -> None:
        self._txn = self._env.begin()

    def export_base(self, where: pathlib.Path) -> None:
        where.mkdir(parents=True, exist_ok=True)
        self._env.copy(str(where), compact=True, txn=self._txn)

    def release(self) -> None:
        if self._txn is not None:
            self._txn.abort()
            self._txn = None

    def close(self) -> None:
        self.release()
        self._env.close()


class Sqlite:
    def __init__(self, path: pathlib.Path, budget: int) -> None:
        (path / "db").mkdir()
        self._file = path / "db" / "state.sqlite"
        self._db = sqlite3.connect(self._file, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(f"PRAGMA cache_size=-{budget // 1024}")
        self._db.execute("CREATE TABLE s (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")
        self._reader: sqlite3.Connection | None = None

    def write(self, keys: list[bytes], values: list[bytes]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany(
            "INSERT OR REPLACE INTO s VALUES (?, ?)", zip(keys, values, strict=True)
        )
        self._db.execute("COMMIT")

    def get(self, key: bytes) -> bytes | None:
        row = self._db.execute("SELECT v FROM s WHERE k = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def hold_snapshot(self, where: pathlib.Path) -> None:
        self._reader = sqlite3.connect(self._file, isolation_level=None, check_same_thread=False)
        self._reader.execute("BEGIN")
        self._reader.execute("SELECT 1 FROM s LIMIT 1").fetchall()  # the snapshot starts here

    def export_base(self, where: pathlib.Path) -> None:
        assert self._reader is not None
        where.mkdir(parents=True, exist_ok=True)
        target = sqlite3.connect(where / "base.sqlite")
        self._reader.execute("COMMIT")  # backup reads consistently on its own
        self._reader.backup(target)
        target.close()

    def release(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def close(self) -> None:
        self.release()
        self._db.close()


OPENERS: dict[str, Callable[[pathlib.Path, int], Store]] = {
    "rocksdict": Rocks,
    "lmdb": Lmdb,
    "sqlite": Sqlite,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5_000_000, help="one worker's share")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--updates", type=int, default=50_000, help="keys rewritten per round")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--reads", type=int, default=100_000)
    parser.add_argument("--budget-mib", type=int, default=256)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--output", type=pathlib.Path, default=None)
    parser.add_argument("--one", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=pathlib.Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _key(i: int) -> bytes:
    return i.to_bytes(8, "big")


def _memory() -> dict[str, int]:
    fields = {"VmHWM": "peak_rss", "RssAnon": "rss_anon", "RssFile": "rss_file"}
    out: dict[str, int] = {}
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in fields:
            out[fields[name]] = int(value.split()[0]) * 1024
    return out


def _bytes_under(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(a: argparse.Namespace, name: str, work: pathlib.Path) -> dict[str, Any]:
    """One candidate, in this process."""
    rng = np.random.default_rng(7)
    noise = rng.bytes(a.value_bytes * BATCH * 2)
    budget = a.budget_mib << 20
    store = OPENERS[name](work, budget)

    def values(n: int, shift: int) -> list[bytes]:
        start = shift % BATCH
        vb = a.value_bytes
        return [noise[(start + j) * vb : (start + j + 1) * vb] for j in range(n)]

    started = time.perf_counter()
    for lo in range(0, a.keys, BATCH):
        hi = min(lo + BATCH, a.keys)
        store.write([_key(i) for i in range(lo, hi)], values(hi - lo, lo))
    load = time.perf_counter() - started
    after_load = _memory()

    writes, syncs, bases, base_bytes = [], [], [], []
    for r in range(a.rounds):
        picked = rng.integers(0, a.keys, a.updates).tolist()
        t0 = time.perf_counter()
        store.write([_key(i) for i in picked], values(len(picked), r * 7919))
        writes.append(time.perf_counter() - t0)
        snap = work / f"snap-{r}"
        t0 = time.perf_counter()
        store.hold_snapshot(snap)
        syncs.append(time.perf_counter() - t0)
        # the next round's writes go on while the snapshot is held
        more = rng.integers(0, a.keys, a.updates).tolist()
        store.write([_key(i) for i in more], values(len(more), r * 104729))
        t0 = time.perf_counter()
        store.export_base(snap)
        bases.append(time.perf_counter() - t0)
        base_bytes.append(_bytes_under(snap))
        store.release()
        shutil.rmtree(snap, ignore_errors=True)

    probes = rng.integers(0, a.keys, a.reads).tolist()
    t0 = time.perf_counter()
    found = sum(store.get(_key(i)) is not None for i in probes)
    reads = time.perf_counter() - t0
    if found != len(probes):
        raise SystemExit(f"{name}: {len(probes) - found} of {len(probes)} keys not found")
    disk = _bytes_under(work / "db")
    store.close()
    return {
        "candidate": name,
        "load_keys_per_s": round(a.keys / load),
        "update_keys_per_s": round(a.updates / float(np.median(writes))),
        "snapshot_sync_ms": _spread_ms(syncs),
        "base_export_s": _spread_s(bases),
        "base_bytes_median": int(np.median(base_bytes)),
        "point_reads_per_s": round(a.reads / reads),
        "memory_after_load": after_load,
        "memory_at_end": _memory(),
        "disk_bytes": disk,
    }


def _spread_ms(values: list[float]) -> dict[str, float]:
    return {
        "median": round(float(np.median(values)) * 1000, 2),
        "max": round(max(values) * 1000, 2),
    }


def _spread_s(values: list[float]) -> dict[str, float]:
    return {"median": round(float(np.median(values)), 3), "max": round(max(values), 3)}


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.one is not None:
        print(json.dumps(measure(a, a.one, a.dir)))
        return 0
    results = []
    for name in a.candidates.split(","):
        work = pathlib.Path(tempfile.mkdtemp(prefix=f"state-backend-{name}-"))
        try:
            args = list(argv if argv is not None else sys.argv[1:])
            args += ["--one", name, "--dir", str(work)]
            done = subprocess.run(
                [sys.executable, "-m", "cjob_bench.extras.state_backends", *args],
                capture_output=True,
                text=True,
                check=False,
                env=os.environ,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if done.returncode != 0:
            results.append({"candidate": name, "error": done.stderr[-2000:]})
        else:
            results.append(json.loads(done.stdout.splitlines()[-1]))
        print(json.dumps(results[-1]), file=sys.stderr)
    doc = {
        "benchmark": "state_backends",
        "method": __doc__,
        "setup": {k: str(v) for k, v in vars(a).items() if k not in ("one", "dir")},
        "machine": machine.describe(),
        "results": results,
    }
    text = json.dumps(doc, indent=1)
    if a.output is not None:
        a.output.write_text(text + "\n")
    print(text)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
