"""Nexmark: the auction benchmark streaming systems publish, on our runtime.

:mod:`.config` (parameters), :mod:`.draws` and :mod:`.generator` (the events,
vectorised), :mod:`.files` (Parquet files for ``FileSource`` and Spark),
:mod:`.queries` and :mod:`.queries_windowed` (q0-q12 with the public API),
:mod:`.reference` (the same queries evaluated in one batch: the oracle),
:mod:`.local` (runs on the in-process executor, checked against the oracle),
:mod:`.crashes` (the same under random crash plans, many times),
:mod:`.spark` (the same queries on Spark Structured Streaming),
:mod:`.kafka` (live on Kafka: sustainable throughput, latency to visible output),
:mod:`.cpu_cost` (checkpoint cost in CPU time), :mod:`.table` (the README's table) and
:mod:`.cli` (``python -m cjob_bench nexmark generate|local|crashes|spark|kafka-…|cpu-cost|table``).
"""
