"""Running the barrier runtime on Spark: the only package that imports pyspark.

What belongs here: the driver (:mod:`~.driver`: load and plan the pipeline,
coordinator server, restart loop, control API), the driver's view of one
attempt on remote workers (:mod:`~.attempt`), the authenticated
driver↔worker transport (:mod:`~.wire`, :mod:`~.messages`,
:mod:`~.coordinator_server`), the workers' rendezvous through the driver
(:mod:`~.rendezvous`, :mod:`~.peer_registry`) and their start-up timings
(:mod:`~.startup`), the worker body that hosts one slice (:mod:`~.worker`),
loading pipelines by reference (:mod:`~.pipeline`), and
the Spark glue proper — building the session (:mod:`~.session`) and
submitting each attempt as a barrier stage (:mod:`~.stage`). Only those two
import pyspark, lazily, so the rest runs (and is tested) without Java: the
tests' ``barrier_runtime_testing.spark`` (``tests/support``) launches workers
on threads instead. The probe that measures a running job's workers (memory
under back-pressure) is benchmark code, ``cjob_bench.probe`` in ``bench/``.
"""
