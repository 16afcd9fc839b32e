"""The ``cjob`` command line: ``cjob run``, ``cjob driver``, ``cjob demo``, ``cjob stop``,
``cjob savepoint``, ``cjob checkpoints …``, ``cjob validate``.

Every user or environment mistake ends in one clear sentence on stderr and
exit code 2; a job that fails ends with exit code 1; both name the log file
that holds the details (:mod:`~barrier_runtime.cli.failures`,
:mod:`~barrier_runtime.cli.logfile`). No traceback reaches the terminal
unless ``--verbose``. With ``--json`` the same sentence and exit code also
end stdout as one ``{"event": "error", …}`` line.

Verbosity: ``-v`` shows ``cjob``'s own log records down to DEBUG and the
tracebacks of failures, while chatty libraries (py4j, pyspark, urllib3) stay
at WARNING and Spark's JVM keeps writing into the log file; ``-vv`` shows
everything, the JVM's output included.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence

from barrier_runtime.cli import (
    checkpoints_cmd,
    control_cmd,
    demo_cmd,
    driver_cmd,
    failures,
    logfile,
    parsing,
    run_cmd,
    validate_cmd,
)
from barrier_runtime.spark import session, worker

__all__ = ["main"]

JOB_COMMANDS = frozenset({"run", "demo", "driver"})
"""Commands that run a job: their log file is opened at start and records everything."""
_JVM_TO_LOG = frozenset({"run", "demo"})
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_QUIET_LEVELS = {"driver": logging.WARNING}
"""Terminal levels without ``--verbose`` (default ERROR): driver pods log lifecycle warnings."""
_ANNOUNCED = {
    "barrier_runtime.driver.graceful_stop": logging.WARNING,
    "barrier_runtime.driver.job_driver": logging.INFO,  # restores, fresh starts, restarts
    "barrier_runtime.storage.checkpoint_store": logging.WARNING,  # unusable checkpoints
}
_SHOWN = {"driver": {"barrier_runtime.driver": logging.INFO}, "run": _ANNOUNCED}
"""Loggers shown at a lower level than the command's (the driver's restart loop)."""
CHATTY_LIBRARIES = ("py4j", "pyspark", "urllib3")
"""Loggers that stay at WARNING on the terminal with ``-v`` (``-vv`` shows them too)."""


def build_parser() -> parsing.Parser:
    parser = parsing.Parser(
        prog="cjob",
        description="Checkpointed Jobs: streaming pipelines with Flink-grade fault tolerance.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show cjob's debug log and tracebacks on stderr (-vv: also py4j, pyspark and "
        "Spark's JVM output)",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {parsing.version()}",
        help="print the version of cjob and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run_cmd.add_parser(sub)
    driver_cmd.add_parser(sub)
    demo_cmd.add_parser(sub)
    control_cmd.add_parsers(sub)
    checkpoints_cmd.add_parser(sub)
    validate_cmd.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parsing.parse(build_parser, words)
    except parsing.UsageError as exc:
        return _usage_error(exc, json_event=parsing.json_requested(words))
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else 0
    name = "-".join(filter(None, (args.command, getattr(args, "action", None))))
    log = logfile.InvocationLog(name)
    verbosity = int(args.verbose)
    json_event = bool(getattr(args, "json", False))
    level = logging.DEBUG if verbosity else _QUIET_LEVELS.get(args.command, logging.ERROR)
    shown = _thresholds(args.command, verbosity)
    # Local Spark workers inherit the environment: they follow the CLI's verbosity.
    os.environ.setdefault(worker.LOG_LEVEL_ENV, logging.getLevelName(level))
    interactive = args.command in _JVM_TO_LOG  # pods' logs keep time and logger on every line
    with _terminal_logging(level, shown, interactive), contextlib.closing(log):
        if args.command in JOB_COMMANDS:
            log.attach()
        try:
            to_log = args.command in _JVM_TO_LOG and verbosity < 2
            with _jvm_log(log if to_log else None):
                code: int = args.run(args)
            return code
        except KeyboardInterrupt:
            print("cjob: interrupted", file=sys.stderr)
            if json_event:
                failures.print_error_event(failures.INTERRUPTED, log.path)
            return failures.EXIT_INTERRUPTED
        except Exception as exc:
            return failures.report(exc, log, verbose=verbosity > 0, json_event=json_event)


def _usage_error(exc: parsing.UsageError, *, json_event: bool) -> int:
    """argparse's own form (usage line, then ``PROG: error: …``), exit 2."""
    print(exc.usage.rstrip(), file=sys.stderr)
    print(f"{exc.prog}: error: {exc.message}", file=sys.stderr, flush=True)
    if json_event:
        failures.print_error_event(failures.Outcome("mistake", exc.message, failures.EXIT_MISTAKE))
    return failures.EXIT_MISTAKE


def _thresholds(command: str, verbosity: int) -> dict[str, int]:
    """Per-logger terminal levels: the command's exceptions, or the chatty libraries at -v."""
    if verbosity == 0:
        quiet = (
            dict.fromkeys(CHATTY_LIBRARIES, logging.CRITICAL + 1) if command in _JVM_TO_LOG else {}
        )  # run and demo: Spark's errors (Java stack traces) go to the log file only
        return {**quiet, **_SHOWN.get(command, {})}
    if verbosity == 1:
        return dict.fromkeys(CHATTY_LIBRARIES, logging.WARNING)
    return {}


@contextlib.contextmanager
def _terminal_logging(level: int, shown: Mapping[str, int], interactive: bool) -> Iterator[None]:
    """Log records at ``level`` and up go to stderr while the command runs."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_TerminalFilter(level, shown))
    handler.setFormatter(_TerminalFormatter(shown) if interactive else logging.Formatter(_FORMAT))
    saved = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)


@contextlib.contextmanager
def _jvm_log(log: logfile.InvocationLog | None) -> Iterator[None]:
    """Spark's JVM writes its output into the log file (the terminal shows one sentence)."""
    path = None if log is None else log.path
    if path is None:
        yield
        return
    saved = os.environ.get(session.JVM_LOG_ENV)
    os.environ[session.JVM_LOG_ENV] = str(path)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(session.JVM_LOG_ENV, None)
        else:
            os.environ[session.JVM_LOG_ENV] = saved


class _TerminalFormatter(logging.Formatter):
    """Announcements (records of a ``shown`` logger below ERROR) read as ``cjob: …`` lines,
    like the rest of the terminal output; everything else carries time, level and logger."""

    def __init__(self, shown: Mapping[str, int]) -> None:
        super().__init__(_FORMAT)
        self._shown = tuple(shown)

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno < logging.ERROR and record.name.startswith(self._shown):
            said = "warning: " if record.levelno >= logging.WARNING else ""
            return f"cjob: {said}{record.getMessage()}"
        return super().format(record)


class _TerminalFilter(logging.Filter):
    """Levels as if the root logger were at the CLI's level (it is at DEBUG for the log file).

    A logger named in ``shown`` (``barrier_runtime.driver`` at INFO in driver
    pods, ``py4j`` at WARNING with ``-v``) and its children keep that level on
    the terminal; else a logger given its own level keeps it; every other
    record needs the CLI's level.
    """

    def __init__(self, level: int, shown: Mapping[str, int]) -> None:
        super().__init__()
        self._level = level
        self._shown = dict(shown)

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        named = [n for n in self._shown if name == n or name.startswith(f"{n}.")]
        if named:
            return record.levelno >= self._shown[max(named, key=len)]
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None and logger.parent is not None:
            if logger.level != logging.NOTSET:
                return record.levelno >= logger.level
            logger = logger.parent
        return record.levelno >= self._level
