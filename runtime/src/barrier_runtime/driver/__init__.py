"""Driver-side job control shared by every executor: the restart loop and its policies.

What belongs here: :class:`~.job_driver.JobDriver` (choose the restore point,
re-commit its sink transactions, run an attempt, take the final checkpoint,
restart failed attempts; implements the control seam
:class:`~barrier_runtime.control.job.JobControl`), the
:mod:`~.attempts` seam through which it runs attempts (threads in-process for
:mod:`barrier_runtime.local`, a Spark barrier stage for
:mod:`barrier_runtime.spark`), and the :mod:`~.restart` policies. Nothing here
knows how subtasks are hosted or how messages reach them.
"""

from barrier_runtime.driver.job_driver import JobDriver, JobFailedError, JobResult
from barrier_runtime.driver.restart import (
    Backoff,
    ExponentialDelayRestartPolicy,
    FixedDelayRestartPolicy,
    RestartDecision,
    RestartPolicy,
)

__all__ = [
    "Backoff",
    "ExponentialDelayRestartPolicy",
    "FixedDelayRestartPolicy",
    "JobDriver",
    "JobFailedError",
    "JobResult",
    "RestartDecision",
    "RestartPolicy",
]
