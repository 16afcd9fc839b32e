"""The ``cjob`` command line: ``cjob run``, ``cjob driver``, ``cjob demo``, ``cjob checkpoints …``.

Every user mistake ends in one clear sentence on stderr and exit code 2;
a job that fails ends with exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from barrier_runtime.api import dataflow
from barrier_runtime.cli import checkpoints_cmd, demo_cmd, driver_cmd, run_cmd
from barrier_runtime.control import server as control_server
from barrier_runtime.local import executor
from barrier_runtime.spark import session, worker
from barrier_runtime.storage import errors

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cjob",
        description="Checkpointed Jobs: streaming pipelines with Flink-grade fault tolerance.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run_cmd.add_parser(sub)
    driver_cmd.add_parser(sub)
    demo_cmd.add_parser(sub)
    checkpoints_cmd.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.ERROR
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Local Spark workers inherit the environment: they follow the CLI's verbosity.
    os.environ.setdefault(worker.LOG_LEVEL_ENV, logging.getLevelName(level))
    try:
        code: int = args.run(args)
        return code
    except (
        errors.StorageError,
        dataflow.InvalidDataflowError,
        ValueError,
        session.SparkUnavailableError,
        control_server.ControlServerError,
    ) as exc:
        print(f"cjob: error: {exc}", file=sys.stderr)
        return 2
    except executor.JobFailedError as exc:
        print(f"cjob: job failed: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cjob: interrupted", file=sys.stderr)
        return 130
