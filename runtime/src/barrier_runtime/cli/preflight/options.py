"""Stage 1 of the preflight: option values and their combinations, no I/O."""

from __future__ import annotations

import argparse
import math
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from barrier_runtime import job_document
from barrier_runtime.cli import failures
from barrier_runtime.core import layout, types
from barrier_runtime.storage import object_store

PROBE_TIMEOUTS = object_store.Timeouts(connect=3.0, read=4.0, retries=0)
"""How long the store check waits for an S3 server (the job itself waits longer)."""
_KNOWN_SCHEMES = ("s3", "file")
_HOST_PORT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*:\d+(?:/|$)")
_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
_CHECKPOINTS_LIST = "cjob checkpoints list shows them"


class PreflightError(failures.InvalidArgumentError):
    """A setting or the job's store or restore target cannot work; found before Spark starts."""


@dataclass(frozen=True, slots=True)
class Names:
    """How the user spelled the settings that :func:`job` checks, for its messages."""

    parallelism: str
    restore_from: str
    master: str
    job: str
    """What names the job and its store (to restore another job's checkpoint, or start anew)."""
    fix: str = ""
    """Appended to every message (``: fix …``) when not empty."""


RUN = Names("--parallelism", "--restore-from", "--master", "--store and --job")
DEMO = Names("--parallelism", "--restore-from", "--master", "--store")
DRIVER = Names(
    "`parallelism` in the job configuration",
    "--restore-from",
    "--master",
    "storage and name of the CheckpointedJob",
    fix=job_document.FIX,
)


def fail(message: str, fix: str = "") -> PreflightError:
    return PreflightError(f"{message}: {fix}" if fix else message)


# -- value rules: each raises one sentence naming the setting --------------------------


def at_least(name: str, value: float, minimum: float, *, fix: str = "", why: str = "") -> None:
    """``value >= minimum`` (and a finite number)."""
    if not (math.isfinite(value) and value >= minimum):
        detail = f" ({why})" if why else ""
        bound = "must not be negative" if minimum == 0 else f"must be at least {minimum:g}"
        raise fail(f"{name} {bound}{detail}, got {value:g}", fix)


def positive(name: str, value: float, *, fix: str = "", why: str = "") -> None:
    """``value > 0`` (and a finite number)."""
    if not (math.isfinite(value) and value > 0):
        detail = f" ({why})" if why else ""
        raise fail(f"{name} must be a positive number{detail}, got {value:g}", fix)


def between(name: str, value: float, low: float, high: float, *, fix: str = "") -> None:
    if not (math.isfinite(value) and low <= value <= high):
        raise fail(f"{name} must be between {low:g} and {high:g}, got {value:g}", fix)


def port(name: str, value: int | None, *, fix: str = "") -> None:
    """A TCP port: 0..65535, where 0 asks the system for a free one."""
    if value is not None and not 0 <= value <= 65535:
        raise fail(
            f"{name} must be a TCP port from 0 to 65535 (0 picks a free one), got {value}", fix
        )


def store_url(
    url: str, name: str = "--store", *, fix: str = "", environ: Mapping[str, str] | None = None
) -> None:
    """A store URL ``cjob`` can open: a path, ``file:///path`` or ``s3://bucket/prefix?endpoint=…``.

    >>> store_url("s3://b/cp?endpoint=http://127.0.0.1:9000")
    >>> store_url("localhost:9000")
    Traceback (most recent call last):
    ...
    barrier_runtime.cli.preflight.options.PreflightError: --store 'localhost:9000' \
is a server address, \
not a store: for an S3 server write s3://BUCKET/PREFIX?endpoint=http://localhost:9000, \
for a local directory ./localhost:9000
    """
    if not url.strip():
        raise fail(
            f"{name} is empty: give a directory or an s3://BUCKET/PREFIX?endpoint=… URL", fix
        )
    if "://" not in url:
        if _HOST_PORT.match(url):
            host = url.split("/", 1)[0]
            raise fail(
                f"{name} {url!r} is a server address, not a store: for an S3 server write "
                f"s3://BUCKET/PREFIX?endpoint=http://{host}, for a local directory ./{url}",
                fix,
            )
        return
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    if scheme in ("http", "https"):
        raise fail(
            f"{name} {_shown(parsed)!r} is an HTTP address, not a store: for an S3 server write "
            f"s3://BUCKET/PREFIX?endpoint={scheme}://{parsed.netloc}",
            fix,
        )
    if scheme not in _KNOWN_SCHEMES:
        raise fail(
            f"{name} {_shown(parsed)!r} has the unknown scheme {parsed.scheme!r}: use "
            "s3://BUCKET/PREFIX?endpoint=http://HOST:PORT, file:///PATH or a plain path",
            fix,
        )
    if scheme == "s3":
        _s3_endpoint(parsed, name, fix, environ)


def _s3_endpoint(
    parsed: urllib.parse.SplitResult, name: str, fix: str, environ: Mapping[str, str] | None
) -> None:
    env = os.environ if environ is None else environ
    given = urllib.parse.parse_qs(parsed.query).get("endpoint")
    source, endpoint = (
        (f"in {name}", given[-1])
        if given
        else next(((f"from ${var}", env[var]) for var in _ENDPOINT_ENV if env.get(var)), ("", ""))
    )
    if endpoint and "://" not in endpoint:
        raise fail(
            f"the S3 endpoint {endpoint!r} ({source}) has no scheme: write http://{endpoint} "
            f"(or https://{endpoint} for TLS)",
            fix,
        )


def _shown(parsed: urllib.parse.SplitResult) -> str:
    """A URL without its query (which may hold an endpoint, never a secret, but is long)."""
    return urllib.parse.urlunsplit(parsed._replace(query=""))


# -- the options of each command ------------------------------------------------------


def checkpointing(
    interval: float,
    timeout: float,
    *,
    mode: str,
    unaligned: bool,
    names: Mapping[str, str],
    fix: str = "",
) -> None:
    positive(names["interval"], interval, fix=fix, why="seconds between checkpoints")
    positive(names["timeout"], timeout, fix=fix, why="seconds a checkpoint may take")
    exactly_once = mode in (types.CheckpointingMode.EXACTLY_ONCE.value, "ExactlyOnce")
    if unaligned and not exactly_once:
        raise fail(
            f"{names['unaligned']} needs {names['mode']} exactly-once (unaligned checkpoints "
            f"store in-flight records, which only exactly-once needs), got {mode}",
            fix,
        )


def run_options(args: argparse.Namespace) -> None:
    """``cjob run``'s options (no I/O)."""
    at_least(
        "--parallelism", args.parallelism, 1, fix="use e.g. -p 2", why="the number of Spark workers"
    )
    checkpointing(
        args.checkpoint_interval,
        args.checkpoint_timeout,
        mode=args.mode,
        unaligned=args.unaligned,
        names=_RUN_CHECKPOINT_NAMES,
    )
    at_least(
        "--state-memory",
        args.state_memory,
        16,
        why="MiB: RocksDB's caches and the decoded values need that much",
    )
    if args.local_recovery and not args.incremental:
        raise fail(
            "--local-recovery needs --incremental (it keeps local copies of the incremental "
            "checkpoints' shared objects)",
            "add --incremental, or drop --local-recovery",
        )
    at_least("--max-restarts", args.max_restarts, 0, why="0 fails the job at the first failure")
    positive("--restart-window", args.restart_window, why="seconds in which --max-restarts count")
    at_least("--restart-backoff", args.restart_backoff, 0, why="seconds before the first restart")
    at_least(
        "--attempts-per-record",
        args.attempts_per_record,
        1,
        why="attempts on a record that fails the same way",
    )
    port("--control-port", args.control_port)
    positive("--stop-grace-period", args.stop_grace_period)
    positive("--status-every", args.status_every)
    store_url(args.store)
    if args.job is not None:
        job_name(args.job)
    if args.restore_from is not None:
        restore_reference(args.restore_from)


def demo_options(args: argparse.Namespace) -> None:
    """``cjob demo``'s options (no I/O)."""
    if not 0 < args.kill_at < 1:
        raise fail(
            f"--kill-at must be a fraction between 0 and 1 (e.g. 0.45), got {args.kill_at:g}"
        )
    at_least("--parallelism", args.parallelism, 1, why="the number of Spark workers")
    at_least("--keys", args.keys, 1)
    at_least("--events-per-key", args.events_per_key, 1)
    positive("--interval", args.interval, why="seconds between checkpoints")
    positive("--rate", args.rate, why="events per second")
    if args.store is not None:
        store_url(args.store)


def driver_document(doc: job_document.JobDocument) -> None:
    """A job configuration's values (the operator's CRD validates them too; files may not)."""
    fix = job_document.FIX
    cp, rp = doc.checkpointing, doc.restart_policy

    def field(path: str) -> str:
        return f"`{path}` in the job configuration"

    checkpointing(
        cp.interval,
        cp.timeout,
        mode=cp.mode,
        unaligned=cp.unaligned,
        fix=fix,
        names={
            "interval": field("checkpointing.intervalSeconds"),
            "timeout": field("checkpointing.timeoutSeconds"),
            "unaligned": field("checkpointing.unaligned"),
            "mode": field("checkpointing.mode"),
        },
    )
    at_least(field("checkpointing.minPauseSeconds"), cp.min_pause, 0, fix=fix)
    at_least(field("checkpointing.maxConcurrent"), cp.max_concurrent, 1, fix=fix)
    at_least(field("checkpointing.tolerableFailures"), cp.tolerable_failures, 0, fix=fix)
    at_least(field("checkpointing.alignedTimeoutSeconds"), cp.aligned_timeout, 0, fix=fix)
    at_least(field("checkpointing.retained"), cp.retained, 1, fix=fix)
    at_least(field("restartPolicy.maxRestarts"), rp.max_restarts, 0, fix=fix)
    positive(field("restartPolicy.windowSeconds"), rp.window, fix=fix)
    at_least(field("restartPolicy.backoff.initialSeconds"), rp.initial, 0, fix=fix)
    at_least(
        field("restartPolicy.backoff.maxSeconds"),
        rp.max,
        rp.initial,
        fix=fix,
        why="not below `restartPolicy.backoff.initialSeconds`",
    )
    at_least(field("restartPolicy.backoff.multiplier"), rp.multiplier, 1, fix=fix)
    between(field("restartPolicy.backoff.jitter"), rp.jitter, 0, 1, fix=fix)
    at_least(field("restartPolicy.resetAfterSeconds"), rp.reset_after, 0, fix=fix)
    if doc.control is not None:
        port(field("control.port"), doc.control.port, fix=fix)
    port(field("coordinator.port"), doc.coordinator_port, fix=fix)
    endpoint = doc.storage.endpoint
    if endpoint and not endpoint.startswith(("http://", "https://", "file://")):
        raise fail(
            f"{field('storage.endpoint')} is {endpoint!r}: it must start with http:// or "
            f"https:// (an S3 endpoint such as http://{endpoint.split('://')[-1]}) or file://",
            fix,
        )


_RUN_CHECKPOINT_NAMES = {
    "interval": "--checkpoint-interval",
    "timeout": "--checkpoint-timeout",
    "unaligned": "--unaligned",
    "mode": "--mode",
}


def job_name(value: str, name: str = "--job") -> None:
    try:
        object_store.validate_key(value.strip("/"))
    except ValueError:
        raise fail(f"{name} must be NAMESPACE/NAME (e.g. default/orders), got {value!r}") from None


def restore_reference(value: str, name: str = "--restore-from") -> None:
    if layout.parse_reference(value) is None:
        raise fail(
            f"{name} {value!r} names no checkpoint: give an id (42), chk-42, sp-42 or the path "
            "of a checkpoint or savepoint directory"
        )
