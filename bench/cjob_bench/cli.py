"""The one command: ``python -m cjob_bench list`` and ``python -m cjob_bench run W1 --peers spark``.

``python -m cjob_bench nexmark generate|local ...`` makes Nexmark events and
runs its queries in-process (:mod:`cjob_bench.nexmark.cli`).

``run`` takes a workload (``W1``, ``W2``, ``W3``, ``W3v``, several of them
comma-separated and with ``W4`` after them in the same session, ``W4``,
``W4-kafka``, ``W5``) or another benchmark
(``startup``, ``recovery``, …: ``list`` shows them all), the options every
entry shares (``--peers``, ``--repeats``), and passes every other option to the
entry as it is; ``run NAME --help`` lists them. Each entry prints one JSON
document on stdout and its progress on stderr.

>>> [e.name for e in ENTRIES][:5]
['W1', 'W2', 'W3', 'W3v', 'W4']
>>> entry_args(find("W4"), ["--seconds", "5"], peers=[], repeats=2)
['--seconds', '5', '--repeats', '2', '--skip-spark-ss', '--skip-real-time']
>>> entry_args(find("W1"), [], peers=["spark"], repeats=None)
['--peers', 'spark']
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cjob_bench.workloads import FILE_WORKLOADS

PeerArgs = Callable[[list[str]], list[str]]
"""``--peers`` (a list of peer names) as the entry's own options."""


def _suite_peers(peers: list[str]) -> list[str]:
    return ["--peers", ",".join(peers)]


def _w4_peers(peers: list[str]) -> list[str]:
    return [] if "spark" in peers else ["--skip-spark-ss", "--skip-real-time"]


def _w4_kafka_peers(peers: list[str]) -> list[str]:
    systems = ["ours-aligned", "ours-unaligned"]
    if "spark" in peers:
        systems += ["spark-real-time", "spark-micro-batch"]
    return ["--systems", ",".join(systems)]


def _w5_peers(peers: list[str]) -> list[str]:
    systems = ["ours", *(["spark_ss", "spark_ss_unthrottled"] if "spark" in peers else [])]
    return ["--systems", ",".join(systems)]


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One runnable benchmark: its module (with ``main(argv)``) and what it measures."""

    name: str
    module: str
    summary: str
    peers: tuple[str, ...] = ()
    """The peers it can run against (``--peers`` picks among them)."""
    peer_args: PeerArgs | None = None
    repeats: bool = True
    """Whether it takes ``--repeats``."""
    suite: bool = False
    """W1-W3v: one run of the file suite, told which workloads by ``--only``."""


SUITE = "cjob_bench.workloads.suite_cli"
ENTRIES: tuple[Entry, ...] = (
    *(
        Entry(
            w.name,
            SUITE,
            w.summary,
            ("spark", "bytewax") if w.bytewax else ("spark",),
            _suite_peers,
            suite=True,
        )
        for w in FILE_WORKLOADS.values()
    ),
    Entry(
        "W4",
        "cjob_bench.workloads.w4",
        "latency of a per-record keyed count at half the maximum rate",
        ("spark",),
        _w4_peers,
    ),
    Entry(
        "W4-kafka",
        "cjob_bench.workloads.w4_kafka.main",
        "W4 on Kafka: producer stamp -> read_committed consumer",
        ("spark",),
        _w4_kafka_peers,
    ),
    Entry(
        "W5",
        "cjob_bench.workloads.w5",
        "1-minute tumbling count per key in event time over Parquet",
        ("spark",),
        _w5_peers,
    ),
    Entry(
        "simultaneous",
        "cjob_bench.extras.simultaneous_overhead",
        "W1, W2 checkpoint overhead, both variants at the same time",
        repeats=False,
    ),
    Entry(
        "startup",
        "cjob_bench.extras.startup",
        "submit -> every worker running -> first record, per attempt",
    ),
    Entry(
        "recovery",
        "cjob_bench.extras.recovery",
        "W1 on generated events: worker SIGKILL -> first record of the restarted attempt",
    ),
    Entry(
        "file-source-read",
        "cjob_bench.extras.file_source_read",
        "FileSource read rates against pyarrow",
    ),
    Entry(
        "unaligned",
        "cjob_bench.extras.unaligned_checkpoints",
        "aligned vs unaligned checkpoint duration behind a slow sink",
        repeats=False,
    ),
    Entry(
        "backpressure",
        "cjob_bench.extras.backpressure",
        "worker memory under back-pressure on Spark",
        repeats=False,
    ),
    Entry(
        "state-scale",
        "cjob_bench.extras.state_scale",
        "incremental vs full checkpoints of 10 M keys, 1 % updated per second",
    ),
    Entry(
        "state-memory",
        "cjob_bench.extras.state_memory",
        "the on-disk backend with state 4x its memory budget: every worker's peak RSS",
    ),
    Entry(
        "state-backends",
        "cjob_bench.extras.state_backends",
        "on-disk stores (RocksDB, LMDB, SQLite) on one worker's share of state-scale",
    ),
)


class UnknownBenchmarkError(ValueError):
    """A name ``run`` does not know; ``python -m cjob_bench list`` shows the known ones."""


def find(name: str) -> Entry:
    for entry in ENTRIES:
        if entry.name.lower() == name.lower():
            return entry
    known = ", ".join(e.name for e in ENTRIES)
    raise UnknownBenchmarkError(f"no benchmark named {name!r}; choose one of {known}")


def entry_args(
    entry: Entry, rest: list[str], *, peers: list[str] | None, repeats: int | None
) -> list[str]:
    """The options ``entry``'s ``main`` gets: ``rest`` as given, then the shared ones translated."""
    args = list(rest)
    if repeats is not None:
        if not entry.repeats:
            raise UnknownBenchmarkError(
                f"{entry.name} takes no --repeats; see run {entry.name} --help"
            )
        args += ["--repeats", str(repeats)]
    if peers is not None:
        if unknown := set(peers) - set(entry.peers):
            raise UnknownBenchmarkError(
                f"{entry.name} has no peer {sorted(unknown)}; it runs against {list(entry.peers) or 'none'}"
            )
        if entry.peer_args is not None:
            args += entry.peer_args(peers)
    return args


def _list() -> str:
    width = max(len(e.name) for e in ENTRIES)
    lines = []
    for e in ENTRIES:
        peers = f" [peers: {', '.join(e.peers)}]" if e.peers else ""
        lines.append(f"{e.name:<{width}}  {e.summary}{peers}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(
        prog="python -m cjob_bench", description=(__doc__ or "").split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the workloads and benchmarks, one a line")
    run = sub.add_parser("run", help="run one benchmark (its own options follow)", add_help=False)
    run.add_argument(
        "name", help="W1, W2, W3, W3v (comma-separated), W4, W4-kafka, W5, or a benchmark of `list`"
    )
    run.add_argument("--peers", default=None, help="comma-separated peers ('' for none)")
    run.add_argument("--repeats", type=int, default=None, help="interleaved repeats")
    sub.add_parser(
        "nexmark", help="Nexmark: generate events, run queries in-process", add_help=False
    )
    ns, rest = parser.parse_known_args(argv)
    if ns.command == "list":
        print(_list())
        return None
    if ns.command == "nexmark":
        return importlib.import_module("cjob_bench.nexmark.cli").main(rest)
    peers = None if ns.peers is None else [p.strip() for p in ns.peers.split(",") if p.strip()]
    names = [n.strip() for n in ns.name.split(",") if n.strip()]
    try:
        entries = [find(n) for n in names]
        if len(entries) > 1 and not all(e.suite or e.name == "W4" for e in entries):
            raise UnknownBenchmarkError("only W1, W2, W3, W3v (one data set) and W4 run together")
        entry = next((e for e in entries if e.suite), entries[0])
        # workloads of one session: a peer of any of them is run where it applies
        together = tuple(dict.fromkeys(p for e in entries for p in e.peers))
        entry = dataclasses.replace(entry, peers=together)
        args = entry_args(entry, rest, peers=peers, repeats=ns.repeats)
    except UnknownBenchmarkError as exc:
        parser.exit(2, f"error: {exc}\n")
    if entry.suite:
        args = ["--only", ",".join(e.name for e in entries), *args]
    sys.argv[0] = f"python -m cjob_bench run {entry.name}"  # the entry's usage line
    module = importlib.import_module(entry.module)
    result = module.main(args)
    if isinstance(result, int) and not isinstance(result, bool):
        sys.exit(result)
    return result
