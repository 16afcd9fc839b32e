"""How a failed ``cjob`` invocation ends: one sentence, an exit code, and the details kept.

Four kinds of failure, told apart by the exception's class. The exit code
(:mod:`barrier_runtime.exit_codes`) says whether starting again can help, which
is how the operator decides to restart a driver pod or to fail the job:

* a mistake in the input (:data:`MISTAKES`: a missing or broken pipeline, a bad
  option or job configuration, no Java): ``cjob: error: <what broke and what to
  do>``, exit code 2 — starting again cannot help;
* a problem of the environment (:data:`TEMPORARY`: an unreachable store or one
  refusing the credentials, an unreachable Spark master, Kubernetes refusing
  Spark, the control port taken):
  ``cjob: error: …``, exit code 75 (``EX_TEMPFAIL``) — it may heal;
* a job that ran and failed (its restart budget is spent, or a failure no
  restart can heal: a poisoned record, an invalid pipeline on the workers):
  ``cjob: job failed: …``, exit code 1 — the restarts already happened;
* an operation on a running job that the job could not carry out (a
  savepoint that failed or did not finish in time, :class:`OperationFailedError`):
  ``cjob: failed: …``, exit code 1;
* anything else is a bug in ``cjob``: ``cjob: internal error: <type>: <msg>``,
  exit code 70 (``EX_SOFTWARE``).

Each is followed by ``cjob: details: <log file> (or run with --verbose)``; the
log file holds the full traceback with its chained causes. Only ``--verbose``
puts the traceback on the terminal too — except in a Kubernetes pod, whose files
go with it: there the traceback goes to the pod's log and the details line says
how to read it (``kubectl logs -n <namespace> <pod>``, :func:`pod_log_command`).
With ``--json`` the same sentence and exit code also end stdout as one
``{"event": "error", …}`` line (:func:`error_event`).

In a Kubernetes container the headline is also the container's termination
message: it is written to ``$CJOB_TERMINATION_MESSAGE_PATH``, default
``/dev/termination-log``, when that file exists (the kubelet creates it), so the
operator and ``kubectl describe pod`` show why the driver stopped.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Any, TextIO

from barrier_runtime import exit_codes
from barrier_runtime.api import dataflow
from barrier_runtime.cli import logfile
from barrier_runtime.control import server as control_server
from barrier_runtime.driver import job_driver
from barrier_runtime.spark import errors as spark_errors
from barrier_runtime.spark import session
from barrier_runtime.storage import errors

EXIT_MISTAKE = exit_codes.MISTAKE
EXIT_FAILED = exit_codes.JOB_FAILED
EXIT_TEMPORARY = exit_codes.TEMPORARY
EXIT_INTERNAL = exit_codes.INTERNAL
EXIT_INTERRUPTED = exit_codes.INTERRUPTED
TERMINATION_MESSAGE_ENV = "CJOB_TERMINATION_MESSAGE_PATH"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
TERMINATION_MESSAGE_LIMIT = 4096
"""The kubelet reads at most 4096 bytes of a termination message."""
IN_KUBERNETES_ENV = "KUBERNETES_SERVICE_HOST"
"""Set by the kubelet in every pod: ``cjob`` runs in one."""
POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class InvalidArgumentError(ValueError):
    """A command-line option has a value ``cjob`` cannot use; the message says which and why."""


class OperationFailedError(RuntimeError):
    """A running job could not carry out what was asked (e.g. its savepoint failed)."""


TEMPORARY: tuple[type[BaseException], ...] = (
    errors.StorageUnavailableError,
    errors.StorageAccessDeniedError,  # a Secret can be fixed while the job waits
    spark_errors.KubernetesAccessError,  # so can RBAC
    spark_errors.SparkMasterUnreachableError,  # a master that is down may come back
    control_server.ControlServerError,
)
MISTAKES: tuple[type[BaseException], ...] = (
    InvalidArgumentError,
    errors.StorageError,
    session.SparkUnavailableError,
    dataflow.InvalidDataflowError,
    ValueError,  # the named input errors (pipeline, job configuration, URLs) are ValueErrors
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the terminal is told and the exit code."""

    kind: str
    """``mistake``, ``job-failed``, ``job-aborted``, ``failed`` or ``internal``."""
    sentence: str
    code: int

    @property
    def headline(self) -> str:
        return f"cjob: {_HEADLINE[self.kind]}{self.sentence}"


_HEADLINE = {
    "mistake": "error: ",
    "job-failed": "job failed: ",
    "job-aborted": "job stopped without a savepoint: ",
    "failed": "failed: ",
    "internal": "internal error: ",
    "interrupted": "",
}


def classify(exc: BaseException) -> Outcome:
    """The headline and exit code for an exception that ended the command."""
    if isinstance(exc, job_driver.JobAbortedError):
        return Outcome("job-aborted", one_line(exc), EXIT_FAILED)
    if isinstance(exc, job_driver.JobFailedError):
        return Outcome("job-failed", one_line(exc), EXIT_FAILED)
    if isinstance(exc, OperationFailedError):
        return Outcome("failed", one_line(exc), EXIT_FAILED)
    if isinstance(exc, TEMPORARY):
        return Outcome("mistake", one_line(exc), EXIT_TEMPORARY)
    if isinstance(exc, MISTAKES):
        return Outcome("mistake", one_line(exc), EXIT_MISTAKE)
    return Outcome("internal", f"{type(exc).__name__}: {one_line(exc)}", EXIT_INTERNAL)


INTERRUPTED = Outcome("interrupted", "interrupted", EXIT_INTERRUPTED)


def error_event(outcome: Outcome, log_path: object | None = None) -> dict[str, Any]:
    """The last line of ``--json`` output when the command failed.

    >>> error_event(Outcome("mistake", "--store is empty", 2))["message"]
    '--store is empty'
    """
    return {
        "event": "error",
        "kind": outcome.kind,
        "message": outcome.sentence,
        "exit_code": outcome.code,
        "log": None if log_path is None else str(log_path),
    }


def print_error_event(outcome: Outcome, log_path: object | None = None) -> None:
    print(json.dumps(error_event(outcome, log_path)), file=sys.stdout, flush=True)


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (its type name when it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def pod_log_command() -> str | None:
    """``kubectl logs -n <namespace> <pod>`` of the pod ``cjob`` runs in; ``None`` outside one."""
    if not os.environ.get(IN_KUBERNETES_ENV):
        return None
    pod = os.environ.get("HOSTNAME") or socket.gethostname()  # a pod's hostname is its name
    try:
        namespace = pathlib.Path(POD_NAMESPACE_FILE).read_text().strip()
    except OSError:
        namespace = ""
    return f"kubectl logs -n {namespace} {pod}" if namespace else f"kubectl logs {pod}"


def details_line(path: object | None, pod_log: str | None = None) -> str:
    if pod_log is not None:  # the log file goes with the pod: the pod's log keeps the details
        return f"cjob: details: the traceback above, in the pod's log ({pod_log})"
    if path is None:
        return (
            "cjob: details: run with --verbose (no log file: no writable log directory; "
            f"set ${logfile.LOG_DIR_ENV})"
        )
    return f"cjob: details: {path} (or run with --verbose)"


def report(
    exc: BaseException,
    log: logfile.InvocationLog,
    *,
    verbose: bool,
    stream: TextIO | None = None,
    json_event: bool = False,
) -> int:
    """Tell the terminal (and the log) how the command failed; returns the exit code.

    ``json_event``: also print :func:`error_event` on stdout (``--json`` mode).
    """
    out = stream or sys.stderr
    outcome = classify(exc)
    path = log.record(exc, outcome.headline)
    pod_log = pod_log_command()
    if verbose or pod_log is not None:
        traceback.print_exception(exc, file=out)
        detail = getattr(exc, "detail", "")
        if detail:  # the user's traceback, from the worker that failed
            print(f"the failing step's traceback:\n{detail.rstrip()}", file=out)
    print(outcome.headline, file=out)
    print(details_line(path, pod_log), file=out, flush=True)
    write_termination_message(outcome.headline)
    if json_event:
        print_error_event(outcome, path)
    return outcome.code


def write_termination_message(headline: str) -> bool:
    """Leave ``headline`` as the container's termination message; ``False`` when not in one."""
    target = pathlib.Path(os.environ.get(TERMINATION_MESSAGE_ENV) or TERMINATION_MESSAGE_PATH)
    if not target.is_file():
        return False
    data = headline.encode()[:TERMINATION_MESSAGE_LIMIT]
    try:
        target.write_bytes(data)
    except OSError:
        return False
    return True
