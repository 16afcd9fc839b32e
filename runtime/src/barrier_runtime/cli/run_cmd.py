"""``cjob run PIPELINE [OPTIONS] [-- ARGS]``: run a pipeline on Spark with checkpoints and recovery.

The embedded default a new user runs first: it starts a local Spark
(``local[P]`` unless ``--master``), runs P workers as one barrier stage,
checkpoints to ``--store`` (a local directory by default), restarts failed
attempts from the latest completed checkpoint, and shows a live view. Run it
again with the same ``--store`` and ``--job`` and it resumes from the latest
completed checkpoint. ``cjob``'s options go anywhere before ``--``; the
pipeline's arguments go after it::

    cjob run examples/running_count.py -p 3 \\
        --store 's3://bucket/cp?endpoint=http://127.0.0.1:8333' -- --keys 1000

Everything that can be checked is checked before Spark starts
(:mod:`~barrier_runtime.cli.preflight`): option values, the store (reached,
credentials accepted, writable) and the checkpoint to restore.

It serves the driver's control API (docs/control-api.md) on 127.0.0.1 (a free port
unless ``--control-port``; ``--no-control-api`` turns it off) with a bearer
token (``$CJOB_CONTROL_TOKEN``, else a generated one), announces it before the
job starts (a ``control`` event with its ``url``) and publishes where it is
for ``cjob stop`` and ``cjob savepoint`` (:mod:`~barrier_runtime.cli.local_jobs`).

SIGTERM or Ctrl-C stop the job the same way as ``cjob stop`` (a final
savepoint within ``--stop-grace-period`` seconds, then exit 0; the next run
with the same ``--store`` and ``--job`` resumes from it); a second one aborts
at once.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import secrets
import time
from collections.abc import Callable
from typing import Any

from barrier_runtime import job_document
from barrier_runtime.cli import (
    failures,
    local_jobs,
    preflight,
    progress,
    run_checkpointing,
    run_summary,
)
from barrier_runtime.core import types
from barrier_runtime.driver import graceful_stop, job_driver, restart
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import driver as driver_mod
from barrier_runtime.spark import pipeline

STATE_DIR_ENV = "XDG_STATE_HOME"


def default_store() -> pathlib.Path:
    """Where checkpoints go without ``--store``: the user's state directory, not the
    working directory, so the same job resumes wherever ``cjob run`` is started from
    (jobs are kept apart by ``--job``)."""
    state = os.environ.get(STATE_DIR_ENV) or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "cjob" / "checkpoints"


TOKEN_ENV = job_document.TOKEN_ENV
USAGE = "cjob run [-h] [OPTIONS] PIPELINE [OPTIONS] [-- PIPELINE_ARGS ...]"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="run a pipeline on Spark (local by default) with checkpoints and recovery",
        usage=USAGE,
        description="Run PIPELINE (a .py file or a module exposing `flow` or `build_flow(args)`)"
        " on Spark with checkpoints and recovery. Options go before or after PIPELINE;"
        " the pipeline's own arguments go after --, e.g."
        " cjob run pipeline.py -p 3 -- --keys 1000.",
    )
    parser.set_defaults(run=run, pipeline_args=[])
    opt = parser.add_argument
    opt("pipeline", metavar="PIPELINE", help="pipeline file (.py) or module name")
    opt(
        "-p",
        "--parallelism",
        type=int,
        default=2,
        metavar="P",
        help="Spark workers, one per slice of the pipeline (default 2)",
    )
    run_checkpointing.add_options(opt)
    opt(
        "--store",
        metavar="URL",
        help="checkpoint store: a directory, file:///DIR or "
        "s3://BUCKET/PREFIX?endpoint=http://HOST:PORT (credentials from $AWS_ACCESS_KEY_ID "
        "and $AWS_SECRET_ACCESS_KEY) (default: $XDG_STATE_HOME/cjob/checkpoints, else "
        "~/.local/state/cjob/checkpoints: the same wherever cjob runs)",
    )
    opt(
        "--job",
        metavar="NAMESPACE/NAME",
        help="the job's name in the store (default default/<flow name>)",
    )
    opt(
        "--restore-from",
        metavar="ID|PATH",
        help="start from this checkpoint or savepoint (an id such as 42, or its path) instead "
        "of the latest completed one",
    )
    opt(
        "--allow-fresh-start",
        action="store_true",
        help="start empty if checkpoints exist but none is usable",
    )
    opt("--master", metavar="URL", help="Spark master URL (default local[P])")
    opt(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Spark configuration (repeatable)",
    )
    opt(
        "--max-restarts",
        type=int,
        default=10,
        metavar="N",
        help="restarts allowed within --restart-window before the job fails "
        "(default %(default)s; 0: fail at the first failure)",
    )
    opt(
        "--restart-window",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="the window in which --max-restarts count (default %(default)g)",
    )
    opt(
        "--restart-backoff",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="first restart delay, doubling up to 60s (default %(default)g)",
    )
    opt(
        "--attempts-per-record",
        type=int,
        default=job_driver.DEFAULT_ATTEMPTS_PER_RECORD,
        metavar="N",
        help="attempts on a record that fails the same way (a step raising on it, a "
        "malformed line) before the job fails instead of restarting (default %(default)s)",
    )
    opt(
        "--control-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve the control API (cjob stop, cjob savepoint) on 127.0.0.1:PORT "
        f"(default 0: a free port); bearer token from ${TOKEN_ENV}, else a generated one",
    )
    opt(
        "--no-control-api",
        action="store_true",
        help="do not serve the control API (cjob stop and cjob savepoint cannot reach the job)",
    )
    opt(
        "--stop-grace-period",
        type=float,
        default=graceful_stop.DEFAULT_GRACE_PERIOD,
        metavar="SECONDS",
        help="on SIGTERM/Ctrl-C/cjob stop, time for the final savepoint (default %(default)g)",
    )
    opt(
        "--status-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="time between two status lines (default %(default)g)",
    )
    opt("--json", action="store_true", help="JSON lines on stdout instead of text (errors too)")


def check_args(args: argparse.Namespace) -> None:
    """Option mistakes, found before the pipeline is imported or Spark starts."""
    if args.store is None:
        args.store = str(default_store())
    preflight.run_options(args)
    _conf(args.conf)


def spec_from_args(
    args: argparse.Namespace, flow_name: str, token: str | None = None
) -> driver_mod.SparkJobSpec:
    ref = pipeline.PipelineRef.parse(args.pipeline, args.pipeline_args)
    return driver_mod.SparkJobSpec(
        pipeline=ref,
        parallelism=args.parallelism,
        store=config_mod.StoreRef(_absolute(args.store), args.job or f"default/{flow_name}"),
        checkpoint=run_checkpointing.from_args(args),
        master=args.master,
        spark_conf=_conf(args.conf),
        restart=driver_mod.RestartSettings(
            max_restarts=args.max_restarts,
            window=args.restart_window,
            backoff=restart.Backoff(
                initial=args.restart_backoff, max=max(60.0, args.restart_backoff)
            ),
            attempts_per_record=args.attempts_per_record,
        ),
        restore_from=_restore_arg(args.restore_from),
        allow_fresh_start=args.allow_fresh_start,
        stop_grace_period=args.stop_grace_period,
        control=None
        if args.no_control_api
        else driver_mod.ControlSettings(port=args.control_port, token=token or _token()),
    )


def run(args: argparse.Namespace) -> int:
    check_args(args)
    out = progress.Output(json_lines=args.json)
    ref = pipeline.PipelineRef.parse(args.pipeline, args.pipeline_args)
    flow = pipeline.load_flow(ref)
    publisher = _ControlPublisher(out)
    spec = spec_from_args(args, flow.name, publisher.token)
    target = preflight.job(spec, flow, preflight.RUN)
    out.say(f"starting Spark ({spec.effective_master}) …", "starting", master=spec.effective_master)
    started = time.monotonic()
    driver = driver_mod.SparkDriver(
        spec,
        flow=flow,
        store=target.store,
        restore=target.restore,
        on_control=publisher.announce_for(spec, target.store.describe()),
    )
    cp = spec.checkpoint
    kind = "unaligned" if cp.unaligned else "aligned"
    if cp.incremental:
        kind += ", incremental"
    if cp.state_backend.kind is types.StateBackendKind.DISK:
        kind += f", state on disk within {cp.state_backend.memory_bytes >> 20} MiB per subtask"
    out.say(
        f"Spark ready in {time.monotonic() - started:.1f}s; job {flow.name}: "
        f"P={spec.parallelism}, {cp.mode.value} ({kind}) checkpoints every {cp.interval:g}s "
        f"to {driver.store.describe()}",
        "started",
        job=spec.store.job_path,
        parallelism=spec.parallelism,
        store=driver.store.describe(),
        coordinator=driver.server.address,
    )
    progress.announce_checkpoint_ids(out, driver.job.checkpoint_ids)
    stopper = graceful_stop.GracefulStop(driver.job, spec.stop_grace_period)
    try:
        with (
            graceful_stop.on_signals(stopper),
            progress.ProgressView(driver.job, out, status_every=args.status_every),
        ):
            result = driver.run()
    except job_driver.JobFailedError as exc:
        if out.json_lines:
            out.say(
                "",
                "summary",
                status="failed",
                reason=str(exc),
                **run_summary.counts(driver.job.result),
                stopped_by=stopper.signal_name,
            )
        raise
    finally:
        publisher.withdraw()
    run_summary.summary(out, driver, result, stopper.signal_name)
    return 0


class _ControlPublisher:
    """Announces the control API and publishes it for ``cjob stop`` / ``cjob savepoint``.

    The token is the user's (``$CJOB_CONTROL_TOKEN``, never written anywhere) or
    one generated for this run, kept only in the private record.
    """

    def __init__(self, out: progress.Output) -> None:
        self._out = out
        self._chosen = _token() is not None
        self.token = _token() or secrets.token_urlsafe(32)
        self._record: pathlib.Path | None = None

    def announce_for(self, spec: driver_mod.SparkJobSpec, store: str) -> Callable[[str], None]:
        def announce(url: str) -> None:
            record = local_jobs.LocalJob(
                pid=os.getpid(),
                job=spec.store.job_path,
                url=url,
                token=None if self._chosen else self.token,
                token_env=TOKEN_ENV if self._chosen else None,
                store=store,
                started=time.time(),
            )
            self._record = local_jobs.publish(record)
            if self._chosen:
                auth = f"bearer token from ${TOKEN_ENV}"
            elif self._record is not None:
                auth = f"bearer token in {self._record}"
            else:
                folder = local_jobs.directory()
                auth = f"token not published: {folder} is not writable; set ${TOKEN_ENV}"
            self._out.say(
                f"control API on {url} ({auth}); cjob stop / cjob savepoint reach it",
                "control",
                url=url,
                authenticated=True,
                record=None if self._record is None else str(self._record),
            )

        return announce

    def withdraw(self) -> None:
        local_jobs.withdraw(self._record)
        self._record = None


def _conf(pairs: list[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise failures.InvalidArgumentError(
                f"--conf expects KEY=VALUE (e.g. --conf spark.executor.memory=2g), got {pair!r}"
            )
        conf[key.strip()] = value
    return conf


def _absolute(store: str) -> str:
    """Plain paths become absolute: executors must not depend on their working directory."""
    return store if "://" in store else str(pathlib.Path(store).expanduser().resolve())


def _restore_arg(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def _token() -> str | None:
    return os.environ.get(TOKEN_ENV) or None
