"""The workloads, one module each, and the one data generator they all read.

* W1 :mod:`.w1`, W2 :mod:`.w2`, W3 and W3v :mod:`.w3`: what each is
  (:class:`.spec.FileWorkload`); they run together in the file suite
  :mod:`.files` (one generated data set, pipeline file :mod:`.files_pipeline`,
  ours :mod:`.files_ours`; command :mod:`.suite_cli`);
* W4: :mod:`.w4` (latency at half the maximum rate, pipeline :mod:`.w4_pipeline`);
  W4 on Kafka: :mod:`.w4_kafka`;
* W5: :mod:`.w5` (event-time windows; pipeline :mod:`.w5_pipeline`, ours
  :mod:`.w5_ours`, Spark :mod:`.w5_spark`, latency :mod:`.w5_latency`);
* :mod:`.data`: the events of W1-W3v and of W5 and their exact answers.

Pipeline files (``*_pipeline.py``) are loaded by path by the Spark driver and
every worker: they import only the runtime's public API.

>>> [w.name for w in FILE_WORKLOADS.values() if w.bytewax]
['W2', 'W3']
"""

from cjob_bench.workloads import spec, w1, w2, w3

FILE_WORKLOADS: dict[str, spec.FileWorkload] = {
    w.name: w for w in (w1.WORKLOAD, w2.WORKLOAD, w3.W3, w3.W3V)
}
"""W1, W2, W3 and W3v by name, in the order the suite runs them."""
