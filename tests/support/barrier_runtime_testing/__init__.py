"""Test doubles and harnesses for the runtime's own tests (not shipped; users get ``barrier_runtime.testing``).

One module per runtime package whose seams they stand in for:

* :mod:`~barrier_runtime_testing.alignment`: a recording barrier-handler controller;
* :mod:`~barrier_runtime_testing.channels`: a task-like producer and consumer of
  network channels, and the bodies of peer worker processes (``multiprocessing``
  spawn imports them by name, so they live here rather than in a test file);
* :mod:`~barrier_runtime_testing.checkpoint`: a recording coordinator gateway, an
  in-memory metadata store that can be told to fail, and a coordinator harness;
* :mod:`~barrier_runtime_testing.processes`: whether a process a server started still
  runs (tests that prove stopping leaves nothing behind);
* :mod:`~barrier_runtime_testing.spark`: a stage launcher that runs an attempt's
  Spark workers on threads of the test process, without Spark or Java.
* :mod:`~barrier_runtime_testing.spark_harness`: for the tests on real Spark
  (``tests/integration/barrier_runtime/spark``): killing workers and drivers, reading
  the driver's JSON lines, calling the control API, checking the published output.

``tests/support`` is on pytest's ``pythonpath``; ``scripts/test.sh`` type-checks
this package with mypy strict.
"""
