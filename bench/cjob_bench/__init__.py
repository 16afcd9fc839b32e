"""The benchmark suite: every workload, every peer, one harness and one command.

    python -m cjob_bench list
    python -m cjob_bench run W1 --peers spark,bytewax [--repeats 3] [--events 10000000]

Not part of the shipped packages (nothing under ``runtime/src`` or
``operator/src`` imports it). ``bench/`` is on pytest's ``pythonpath`` and
must be on ``sys.path`` (``PYTHONPATH=runtime/src:bench``) when the command
runs; the child processes a benchmark starts get it from the harness.

* :mod:`cjob_bench.cli`: the command (``list``, ``run NAME [options]``).
* :mod:`cjob_bench.workloads`: W1-W5, one module each (``w1`` … ``w5``;
  their pipeline files, loaded by path by the Spark workers, beside them)
  and the one data generator every workload reads
  (:mod:`cjob_bench.workloads.data`).
* :mod:`cjob_bench.peers`: the systems measured: ours, Spark Structured
  Streaming, Bytewax.
* :mod:`cjob_bench.harness`: interleaved repeats, medians, machine load,
  answers checked, the simultaneous mode, the bytecode cache.
* :mod:`cjob_bench.extras`: benchmarks that are not a workload against
  peers: start-up, recovery, ``FileSource`` reads, unaligned checkpoints,
  back-pressure, the simultaneous checkpoint overhead.
* :mod:`cjob_bench.probe`: the back-pressure workload, its memory bound and a
  probe that samples worker memory while a Spark job runs (also used by
  ``tests/integration/barrier_runtime/spark/test_spark_backpressure.py``).
"""
