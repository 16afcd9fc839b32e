"""Benchmark support code: what ``bench/`` scripts and the tests that check their claims share.

Not part of the shipped packages (nothing under ``runtime/src`` or
``operator/src`` imports it). ``bench/`` is on pytest's ``pythonpath`` and on
``sys.path`` when a script in ``bench/`` runs; a pipeline file that Spark
workers load by path puts ``bench/`` on ``sys.path`` itself
(``tests/integration/barrier_runtime/spark/throttled_count_pipeline.py``).

* :mod:`cjob_bench.probe`: the back-pressure workload, its memory bound and a
  probe that samples worker memory while a Spark job runs.
* :mod:`cjob_bench.suite`: the fair benchmark suite run by ``bench/suite.py``
  (W1-W3 against Spark Structured Streaming and Bytewax on the same files).
"""
