"""``cjob stop`` and ``cjob savepoint``: act on a running job through its control API.

Which job: ``--url`` names a control API (a driver pod's, or any ``cjob run``);
without it, the ``cjob run`` on this machine that published its control API
(:mod:`~barrier_runtime.cli.local_jobs`) — the only one, or the one ``--job``
names. The bearer token: ``--token-file``, else ``--token``, else
``$CJOB_CONTROL_TOKEN``, else the token the local run generated.

* ``cjob stop`` takes a final savepoint and stops the job (``POST /v1/stop``,
  exactly what SIGTERM or Ctrl-C on ``cjob run`` do); it prints the
  savepoint, which the next ``cjob run`` with the same store and job resumes
  from (or ``--restore-from`` names). The control API never stops a job
  without a savepoint: ``--savepoint`` is the default and only mode.
* ``cjob savepoint`` triggers a savepoint (``POST /v1/checkpoints``), waits
  until it completed, and prints its id and path; the job keeps running.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from barrier_runtime import job_document
from barrier_runtime.cli import control_client, failures, local_jobs

TOKEN_ENV = job_document.TOKEN_ENV
DEFAULT_TIMEOUT = 120.0


class NoRunningJobError(ValueError):
    """No published ``cjob run`` matches, or several do."""


def add_parsers(sub: Any) -> None:
    stop = sub.add_parser(
        "stop",
        help="stop a running job with a final savepoint (its control API)",
        description="Take a final savepoint of a running job and stop it; the next cjob run "
        "with the same store and job resumes from it.",
    )
    _target_options(stop)
    stop.add_argument(
        "--savepoint",
        action="store_true",
        default=True,
        help="stop with a final savepoint (the default and only mode: the control API never "
        "stops a job without one)",
    )
    _common_options(stop)
    stop.set_defaults(run=_stop)
    savepoint = sub.add_parser(
        "savepoint",
        help="take a savepoint of a running job and wait for it (its control API)",
        description="Trigger a savepoint of a running job, wait until it completed, and print "
        "its id and path; the job keeps running.",
    )
    _target_options(savepoint)
    _common_options(savepoint)
    savepoint.set_defaults(run=_savepoint)


def _target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--job",
        metavar="NAMESPACE/NAME",
        help="which local cjob run, when several run (default: the only one)",
    )
    parser.add_argument(
        "--url",
        metavar="URL",
        help="the job's control API, e.g. http://127.0.0.1:8080 (default: the one the local "
        f"cjob run published in {local_jobs.directory()})",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help=f"read the bearer token from FILE (default ${TOKEN_ENV}, else the token the local "
        "cjob run generated)",
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="the bearer token itself (visible to other users in the process list: prefer "
        "--token-file)",
    )


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait for the savepoint (default %(default)g)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON line")


def _stop(args: argparse.Namespace) -> int:
    client, job = _connect(args)
    done = client.stop_with_savepoint(args.timeout)
    if args.json:
        _print_json("stopped", job, done)
    else:
        print(
            f"stopped job {job} with savepoint {done['id']} at {done['path']} (the next cjob run "
            f"of this job resumes from it, or --restore-from {done['id']})"
        )
    return 0


def _savepoint(args: argparse.Namespace) -> int:
    client, job = _connect(args)
    done = client.savepoint(args.timeout)
    if args.json:
        _print_json("savepoint", job, done)
    else:
        print(f"savepoint {done['id']} of job {job} completed: {done['path']}")
    return 0


def _print_json(event: str, job: str, done: Mapping[str, Any]) -> None:
    doc = {"event": event, "job": job, "id": done["id"], "path": done["path"]}
    print(json.dumps(doc), flush=True)


def _connect(args: argparse.Namespace) -> tuple[control_client.ControlClient, str]:
    """A client of the chosen job's control API, checked by asking for the job."""
    if not (args.timeout > 0):
        raise failures.InvalidArgumentError(
            f"--timeout must be a positive number of seconds, got {args.timeout:g}"
        )
    token = _given_token(args)
    if args.url:
        client = control_client.ControlClient(args.url, token)
        return client, client.job()["name"] or args.url
    local = _local_job(args.job)
    client = control_client.ControlClient(local.url, local.token if token is None else token)
    client.job()
    return client, local.job


def _given_token(args: argparse.Namespace) -> str | None:
    if args.token_file:
        try:
            text = pathlib.Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise failures.InvalidArgumentError(
                f"cannot read --token-file {args.token_file} ({exc.strerror or exc}): "
                "check the path"
            ) from None
        if not text:
            raise failures.InvalidArgumentError(f"--token-file {args.token_file} is empty")
        return text
    return args.token or os.environ.get(TOKEN_ENV) or None


def _local_job(name: str | None) -> local_jobs.LocalJob:
    folder = local_jobs.directory()
    jobs = local_jobs.running(folder)
    if name is not None:
        jobs = [j for j in jobs if j.job == name.strip("/")]
    if not jobs:
        which = f"of job {name} " if name else ""
        raise NoRunningJobError(
            f"no cjob run {which}is running on this machine (none published in {folder}): "
            "start one with cjob run, or pass --url of the job's control API"
        )
    if len(jobs) > 1:
        listed = ", ".join(f"{j.job} (pid {j.pid}, {j.url})" for j in jobs)
        how = "--url" if name else "--job or --url"
        raise NoRunningJobError(
            f"{len(jobs)} jobs run on this machine ({listed}): choose one with {how}"
        )
    return jobs[0]
