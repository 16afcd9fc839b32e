"""How ``cjob`` ends, as a number: the contract between the driver and the operator.

The operator restarts a driver pod only when starting again can help:

* :data:`FINISHED` — the job finished, or stopped with a savepoint;
* :data:`JOB_FAILED` — the job failed for good: its restart budget is spent, or
  it failed in a way no restart heals (the same record failing again, an
  invalid pipeline on the workers). The restarts already happened: Failed;
* :data:`MISTAKE` — a mistake in the input (pipeline, options, job
  configuration): Failed until the spec changes;
* :data:`INTERNAL` — a bug in ``cjob`` (``EX_SOFTWARE``): restarted;
* :data:`TEMPORARY` — the environment refused (storage unreachable or refusing
  the credentials, the Spark master unreachable, Kubernetes RBAC, the control
  port taken; ``EX_TEMPFAIL``): restarted with backoff, as it may heal;
* :data:`INTERRUPTED` and deaths by signal (128 + n, e.g. 137 for SIGKILL,
  an OOM kill): restarted.

This module is on the ground floor: the operator imports it without the runtime.
"""

from __future__ import annotations

FINISHED = 0
JOB_FAILED = 1
MISTAKE = 2
INTERNAL = 70
TEMPORARY = 75
INTERRUPTED = 130

FINAL = frozenset({JOB_FAILED, MISTAKE})
"""Exit codes after which restarting the driver cannot help."""
