"""Stage 2 of the preflight: the job against its pipeline and store (reads and probes the store)."""

from __future__ import annotations

import pathlib
import urllib.parse
from dataclasses import dataclass

from barrier_runtime.api import dataflow
from barrier_runtime.cli.preflight.options import (
    _CHECKPOINTS_LIST,
    PROBE_TIMEOUTS,
    RUN,
    Names,
    PreflightError,
    fail,
    restore_reference,
)
from barrier_runtime.core import layout, types
from barrier_runtime.core import metadata as md
from barrier_runtime.driver import restore as restore_mod
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.spark import driver as driver_mod
from barrier_runtime.spark import master, session
from barrier_runtime.storage import checkpoint_store, errors, local
from barrier_runtime.storage import preflight as storage_preflight


@dataclass(frozen=True, slots=True)
class Target:
    """What the pre-flight found: the job's store, opened, and what its first attempt restores."""

    store: checkpoint_store.CheckpointStore
    restore: restore_mod.Decided | None
    """``None`` when ``--restore-from`` names it (the driver loads and verifies it)."""


def job(spec: driver_mod.SparkJobSpec, flow: dataflow.Dataflow, names: Names = RUN) -> Target:
    """Check ``spec`` against ``flow``, its master and its store; what the job starts from."""
    # Step 1: the parallelism against the pipeline and the master, and the pipeline's graph
    parallelism(spec, flow, names)
    plan_mod.plan(flow, spec.parallelism)
    # Step 2: the Spark master answers (a few seconds, where Spark waits a minute)
    master.check_reachable(spec.effective_master, names.master)
    # Step 3: the store: reachable, credentials accepted, writable (short timeouts)
    probe = spec.store.open(timeouts=PROBE_TIMEOUTS)
    storage_preflight.check_usable(probe)
    # Step 4: what the first attempt restores
    if spec.restore_from is not None:
        restore_target(probe, spec.restore_from, flow, names)
        return Target(spec.store.open(), None)
    store = spec.store.open()
    return Target(store, restore_choice(store, flow, names, spec.allow_fresh_start))


def parallelism(spec: driver_mod.SparkJobSpec, flow: dataflow.Dataflow, names: Names) -> None:
    p, most = spec.parallelism, flow.max_parallelism
    if p > most:
        raise fail(
            f"{names.parallelism} is {p} but the pipeline {flow.name} has max parallelism {most} "
            f"(its number of key groups): use at most {most}, or raise max_parallelism in "
            "Dataflow(...) for a new job",
            names.fix,
        )
    slots = session.local_slots(spec.effective_master)
    if slots is not None and slots < p:
        raise fail(
            f"{names.master} {spec.effective_master} has {slots} task slot(s) but "
            f"{names.parallelism} is {p} (one slot per worker): use local[{p}] or a lower "
            "parallelism",
            names.fix,
        )


def restore_target(
    store: checkpoint_store.CheckpointStore,
    value: int | str,
    flow: dataflow.Dataflow,
    names: Names = RUN,
) -> md.CheckpointMetadata:
    """The checkpoint ``--restore-from`` names: it exists, completed, and fits the pipeline."""
    reference = layout.parse_reference(value)
    if reference is None:
        restore_reference(str(value), names.restore_from)
        raise AssertionError("unreachable")  # pragma: no cover
    shown = f"{names.restore_from} {value}"
    if reference.location:
        _local_path_exists(store, str(value), shown, names)
    try:
        found = store.find(value)
    except errors.CheckpointNotFoundError:
        raise _not_found(store, reference, shown, names) from None
    missing = store.missing_objects(found)
    if missing:
        raise fail(
            f"{shown} cannot be restored: {len(missing)} of its state objects are missing or "
            f"truncated (first: {missing[0]}); restore another one ({_CHECKPOINTS_LIST})",
            names.fix,
        )
    _same_max_parallelism(found, flow, f"{shown} ({found.kind.value} {found.checkpoint_id})", names)
    return found


def restore_choice(
    store: checkpoint_store.CheckpointStore,
    flow: dataflow.Dataflow,
    names: Names = RUN,
    allow_fresh_start: bool = False,
) -> restore_mod.Decided:
    """What a run without ``--restore-from`` resumes: the newest checkpoint or savepoint whose
    state objects all verify (the driver's own rule), taken with the pipeline's max parallelism.

    When checkpoints exist but none verifies, this is where the job stops
    (:class:`~barrier_runtime.storage.errors.NoUsableCheckpointError`), unless a fresh
    start is allowed.
    """
    chosen = store.select_restore_point(allow_fresh_start=allow_fresh_start)
    if chosen is not None:
        what = f"the latest {chosen.kind.value} ({chosen.checkpoint_id}) in {store.describe()}"
        _same_max_parallelism(chosen, flow, what, names)
    return restore_mod.Decided(chosen)


def _same_max_parallelism(
    found: md.CheckpointMetadata, flow: dataflow.Dataflow, what: str, names: Names
) -> None:
    taken = found.fingerprint.max_parallelism
    if taken != flow.max_parallelism:
        raise fail(
            f"{what} was taken with max parallelism {taken} but the pipeline {flow.name} has "
            f"{flow.max_parallelism}: its keyed state cannot be split differently; set "
            f"Dataflow(..., max_parallelism={taken}), or start a new job (another {names.job})",
            names.fix,
        )


def _local_path_exists(
    store: checkpoint_store.CheckpointStore, value: str, shown: str, names: Names
) -> None:
    """A path on this machine must exist, and in a local store it must be this job's."""
    path = _local_path(value)
    objects = store.object_store
    if path is None or not isinstance(objects, local.LocalObjectStore):
        return
    job_root = objects.root / store.job_path
    candidates = (
        [path]
        if path.is_absolute()
        else [pathlib.Path.cwd() / path, job_root / path, objects.root / path]
    )
    existing = [c.resolve() for c in candidates if c.exists()]
    if not existing:
        raise fail(
            f"{shown} does not exist: name a checkpoint or savepoint directory, or an id "
            f"({_CHECKPOINTS_LIST})",
            names.fix,
        )
    root = job_root.resolve()
    if not any(c == root or root in c.parents for c in existing):
        raise _elsewhere(store, shown, names)


def _elsewhere(store: checkpoint_store.CheckpointStore, shown: str, names: Names) -> PreflightError:
    return fail(
        f"{shown} is not in this job's store ({store.describe()}): restore it with the "
        f"{names.job} of the job it belongs to",
        names.fix,
    )


def _local_path(value: str) -> pathlib.Path | None:
    """The directory ``value`` names on this machine (``None`` for s3:// URLs)."""
    raw = value.split("?", 1)[0]
    if "://" in raw:
        parsed = urllib.parse.urlsplit(raw)
        if parsed.scheme.lower() != "file":
            return None
        raw = urllib.parse.unquote(parsed.path)
    raw = raw.rstrip("/").removesuffix(f"/{layout.METADATA_NAME}")
    return pathlib.Path(raw).expanduser()


def _not_found(
    store: checkpoint_store.CheckpointStore,
    reference: layout.Reference,
    shown: str,
    names: Names,
) -> PreflightError:
    location, job = reference.location.rstrip("/"), store.job_path
    if location and job and not (location == job or location.endswith(f"/{job}")):
        return _elsewhere(store, shown, names)
    kinds = [reference.kind] if reference.kind else list(types.CheckpointKind)
    refs = [layout.CheckpointRef(reference.checkpoint_id, kind) for kind in kinds]
    inventory = store.scan()
    torn = [ref for ref in refs if ref in inventory.dirs]
    if torn:
        return fail(
            f"{shown} is not a completed checkpoint: {torn[0]} has no _metadata (it was never "
            f"committed, or its commit was lost); restore a completed one ({_CHECKPOINTS_LIST})",
            names.fix,
        )
    if location:
        return fail(
            f"{shown} does not exist in {store.describe()} ({_CHECKPOINTS_LIST})", names.fix
        )
    return fail(
        f"{shown}: checkpoint {reference.checkpoint_id} is not in {store.describe()}: name one "
        f"that exists ({_CHECKPOINTS_LIST})",
        names.fix,
    )
