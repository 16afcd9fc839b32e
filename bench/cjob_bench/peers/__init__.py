"""The systems measured, one module each: the same inputs, the same work, timed the same way.

* :mod:`.ours`: our runtime on local Spark, a pipeline file per run, checkpoints to the
  embedded S3 server;
* :mod:`.spark`: Spark Structured Streaming (modes: micro-batch at a 1 s cadence,
  ``availableNow``, a cold process; W4 and W5 add theirs, see the workload modules);
* :mod:`.bytewax`: Bytewax, two processes, recovery every 1 s (flow :mod:`.bytewax_flow`).

There is no PyFlink peer.
"""
