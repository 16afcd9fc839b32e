"""The workloads, one module each, and the one data generator they all read.

* W1, W2, W3, W3v: :mod:`.files` (one generated data set, pipeline file
  :mod:`.files_pipeline`; command :mod:`.suite_cli`);
* W4: :mod:`.w4` (latency at half the maximum rate, pipeline :mod:`.w4_pipeline`);
  W4 on Kafka: :mod:`.w4_kafka`;
* W5: :mod:`.w5` (event-time windows; pipeline :mod:`.w5_pipeline`, ours
  :mod:`.w5_ours`, Spark :mod:`.w5_spark`, latency :mod:`.w5_latency`);
* :mod:`.data`: the events of W1-W3v and of W5 and their exact answers.

Pipeline files (``*_pipeline.py``) are loaded by path by the Spark driver and
every worker: they import only the runtime's public API.
"""
