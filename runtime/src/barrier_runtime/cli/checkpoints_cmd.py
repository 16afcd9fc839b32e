"""``cjob checkpoints list|show|verify|delete --store URL --job NAMESPACE/NAME``.

A store or job that does not exist is a mistake (exit 2 naming what was
looked at), not an empty listing; an existing job without completed
checkpoints says so and exits 1 (like ``grep`` finding nothing). An unknown checkpoint id is exit 2;
``verify`` exits 1 only for a checkpoint that exists but would not restore.

``list`` verifies every checkpoint as a restore would (:mod:`~barrier_runtime.storage.audit`:
each state object read and checked against its size and sha256) and shows its
STATUS: ``ok``, ``corrupt: <first problem>`` (a restore skips it) or
``incomplete`` (no ``_metadata``: being written, or never committed). It exits 1
when any completed checkpoint is corrupt, as ``verify`` does for one, so a
script notices; incomplete ones alone do not change the exit code (a running
job always has one).

``delete`` asks before it deletes a savepoint (retention never deletes
savepoints: they are what restores and upgrades start from): on a terminal
it asks for ``y``; without one (a script, a pipe) it refuses unless ``--yes``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from barrier_runtime.cli import failures
from barrier_runtime.core import layout, types
from barrier_runtime.storage import audit, checkpoint_store, errors, object_store, preflight


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("checkpoints", help="inspect and manage stored checkpoints")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in (
        (
            "list",
            "list checkpoints and savepoints with their status (ok, corrupt: why, incomplete), "
            "verified as a restore would; exit 1 if any is corrupt",
        ),
        ("show", "print one checkpoint's metadata"),
        ("verify", "check that every object of a checkpoint exists with its size and sha256"),
        ("delete", "delete one checkpoint (its _metadata first)"),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument(
            "--store", required=True, help="file:///dir, /dir or s3://bucket/prefix?endpoint=…"
        )
        action.add_argument("--job", required=True, help="NAMESPACE/NAME of the job")
        action.add_argument("--json", action="store_true", help="machine-readable output")
        if name != "list":
            action.add_argument("checkpoint", help="id (42), chk-42, sp-42 or a path")
        if name == "delete":
            action.add_argument(
                "-y",
                "--yes",
                action="store_true",
                help="delete a savepoint without asking (needed when no terminal can answer)",
            )
        action.set_defaults(run=_RUNNERS[name])


def _store(args: argparse.Namespace) -> checkpoint_store.CheckpointStore:
    return checkpoint_store.CheckpointStore(object_store.open_object_store(args.store), args.job)


@contextlib.contextmanager
def _named(store: checkpoint_store.CheckpointStore) -> Iterator[None]:
    """An unknown checkpoint in an unknown job or store: say that the job or store is unknown."""
    try:
        yield
    except errors.CheckpointNotFoundError:
        preflight.require_job(store)
        raise


def _row(found: audit.Audited) -> dict[str, Any]:
    meta = found.metadata
    return {
        "id": found.ref.checkpoint_id,
        "kind": found.ref.kind.value,
        "completed": None
        if meta is None
        else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(meta.completion_time)),
        "duration_s": None if meta is None else round(meta.completion_time - meta.trigger_time, 3),
        "size_bytes": None if meta is None else meta.total_size,
        "uploaded_bytes": None if meta is None else layout.uploaded_size(meta),
        "parallelism": None if meta is None else meta.fingerprint.parallelism,
        "status": found.status.value,
        "problems": list(found.problems),
    }


def _list(args: argparse.Namespace) -> int:
    store = _store(args)
    found = audit.audit(store)
    rows = [_row(a) for a in found]
    committed = [a for a in found if a.status is not audit.Status.INCOMPLETE]
    if not committed:
        preflight.require_job(store)
    if args.json:
        print(json.dumps(rows))
    else:
        _print_table(found)
    if not committed:
        print(
            f"cjob: job {args.job} in {store.describe()} has no completed checkpoint "
            "(only ones that never completed)",
            file=sys.stderr,
        )
        return 1
    corrupt = [a for a in found if a.status is audit.Status.CORRUPT]
    if corrupt:
        print(
            f"cjob: {len(corrupt)} of {len(committed)} completed checkpoints are corrupt: a "
            f"restore skips them (cjob checkpoints verify --store … --job {args.job} ID shows "
            "every problem)",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_table(found: list[audit.Audited]) -> None:
    if not found:
        return
    header = ("ID", "KIND", "COMPLETED", "DURATION", "SIZE", "UPLOADED", "P")
    print("{:>6}  {:<10}  {:<20}  {:>9}  {:>10}  {:>10}  {:>3}  STATUS".format(*header))
    for a in found:
        r = _row(a)
        if a.metadata is None:
            completed, duration, size, uploaded, p = "-", "-", "-", "-", "-"
        else:
            completed, duration = r["completed"], f"{r['duration_s']:.3f}s"
            size, uploaded = str(r["size_bytes"]), str(r["uploaded_bytes"])
            p = str(r["parallelism"])
        print(
            f"{r['id']:>6}  {r['kind']:<10}  {completed:<20}  {duration:>9}  {size:>10}  "
            f"{uploaded:>10}  {p:>3}  {a.shown}"
        )


def _show(args: argparse.Namespace) -> int:
    store = _store(args)
    with _named(store):
        meta = store.load(args.checkpoint)
    print(json.dumps(json.loads(meta.to_json()), indent=None if args.json else 2))
    return 0


def _verify(args: argparse.Namespace) -> int:
    store = _store(args)
    with _named(store), contextlib.suppress(errors.CorruptCheckpointError):
        store.find(args.checkpoint)  # unknown: exit 2; unreadable: one of the problems below
    problems = store.verify(args.checkpoint)
    if args.json:
        print(json.dumps({"checkpoint": args.checkpoint, "problems": problems}))
    elif problems:
        for p in problems:
            print(f"problem: {p}")
    else:
        print(f"checkpoint {args.checkpoint} is intact")
    return 1 if problems else 0


def _delete(args: argparse.Namespace) -> int:
    store = _store(args)
    with _named(store):
        targets = store.deletion_targets(args.checkpoint)
    savepoints = [t for t in targets if t.kind is types.CheckpointKind.SAVEPOINT]
    if savepoints and not args.yes and not _confirmed(savepoints[0], store):
        print(f"kept {savepoints[0]}: nothing deleted", file=sys.stderr)
        return 1
    store.delete_checkpoint(args.checkpoint)
    if not args.json:
        print(f"deleted checkpoint {args.checkpoint}")
    return 0


def _confirmed(savepoint: layout.CheckpointRef, store: checkpoint_store.CheckpointStore) -> bool:
    """Ask on the terminal; without one, refuse (a script must say --yes)."""
    if not sys.stdin.isatty():
        raise failures.InvalidArgumentError(
            f"{savepoint} in {store.describe()} is a savepoint (kept for restores and upgrades; "
            "retention never deletes savepoints): pass --yes to delete it, no terminal here "
            "can confirm"
        )
    print(f"delete {savepoint} in {store.describe()}? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


_RUNNERS = {"list": _list, "show": _show, "verify": _verify, "delete": _delete}
