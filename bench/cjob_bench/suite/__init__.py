"""The fair benchmark suite behind ``bench/suite.py``: every system reads the same files.

Workloads (one generated data set per run, see :mod:`.data`):

* **W1** vectorised keyed sum: Parquet → ``key_by("by-key", "key").sum(...)``;
* **W2** per-record keyed running count with a Python function
  (``key_by(lambda r: r["key"]).stateful_map(...)``);
* **W3** JSON lines → parse → filter → keyed count → file sink.

Systems: ours on local Spark (:mod:`.ours`, pipeline file :mod:`.pipeline`),
Spark Structured Streaming (:mod:`.spark_peer`), Bytewax (:mod:`.bytewax_peer`,
flow :mod:`.bytewax_flow`). Every run's final per-key answer is checked
against the analytic one (:mod:`.answers`); medians, ratios and the table
come from :mod:`.report`.
"""
