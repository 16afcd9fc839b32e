"""Benchmarks that are not a workload against peers, each runnable as ``python -m cjob_bench run NAME``.

``startup``, ``recovery`` (W1 over generated events: worker SIGKILL → first
record), ``file-source-read``, ``unaligned``, ``backpressure``,
``simultaneous`` (W1, W2 checkpoint overhead with both variants at the same time).
"""
