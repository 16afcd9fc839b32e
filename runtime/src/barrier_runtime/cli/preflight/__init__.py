"""Everything ``cjob run``, ``cjob demo`` and ``cjob driver`` can check before Spark starts.

Spark takes 7 s or more to start; a mistake it would only reveal afterwards
(or minutes later, as failed checkpoints) is found here instead, in a second,
as one sentence that names the option the way the user wrote it
(``--max-restarts``, or ``restartPolicy.maxRestarts`` in a job configuration),
and ``cjob`` exits with code 2 (:class:`PreflightError`). All of it lives in this
one module, so that what is checked before Spark is in one place. Two stages:

1. option values, no I/O (:func:`run_options`, :func:`demo_options`,
   :func:`driver_document`): ranges (ports in 0..65535, restart budgets of 0 or
   more, positive intervals and windows), combinations (unaligned
   checkpoints need exactly-once) and the store URL's shape
   (:func:`store_url`: a known scheme; ``localhost:9000`` is not a store;
   an S3 endpoint must say ``http://`` or ``https://``);
2. the job against its pipeline, master and store (:func:`job`): the
   parallelism against the pipeline's max parallelism and the local master's
   task slots; the pipeline's graph (a source, a sink, no dangling step); the
   Spark master's host resolves and its port answers
   (:mod:`~barrier_runtime.spark.master`; exit code 75, as the store's); the
   store reached, its credentials accepted and a probe object written (with
   short timeouts, so an endpoint that does not answer fails in seconds); the
   checkpoint to restore: the one ``--restore-from`` names exists, was
   completed and still has its state objects, or else the newest whose state
   objects all verify is chosen (:func:`restore_choice`, the driver's own rule,
   so that "no usable checkpoint" is said here and not after Spark started);
   either was taken with the pipeline's max parallelism.
"""

from barrier_runtime.cli.preflight.options import (
    DEMO,
    DRIVER,
    PROBE_TIMEOUTS,
    RUN,
    Names,
    PreflightError,
    demo_options,
    driver_document,
    job_name,
    restore_reference,
    run_options,
    store_url,
)
from barrier_runtime.cli.preflight.target import (
    Target,
    job,
    parallelism,
    restore_choice,
    restore_target,
)

__all__ = [
    "DEMO",
    "DRIVER",
    "PROBE_TIMEOUTS",
    "RUN",
    "Names",
    "PreflightError",
    "Target",
    "demo_options",
    "driver_document",
    "job",
    "job_name",
    "parallelism",
    "restore_choice",
    "restore_reference",
    "restore_target",
    "run_options",
    "store_url",
]
