"""The one harness every workload runs through.

* :mod:`.runs`: interleaved repeats (the order reverses every other repeat),
  a failed run kept with its error, S3 credentials for Spark's executors,
  another benchmark run as a child process;
* :mod:`.report`: medians, ratios between systems, checkpoint overheads, the table;
* :mod:`.machine`: the machine, its load average and CPU seconds around each run;
* :mod:`.answers`: every run's per-key answer checked against the exact one;
* :mod:`.simultaneous`: the simultaneous mode (with and without checkpoints
  at the same time, compared over their common window);
* :mod:`.checkpoint_counts`: periodic checkpoints of a finished job;
* :mod:`.bytecode`: benchmarks run with a bytecode cache, as users' installs do.
"""
