"""Benchmark W5 behind ``bench/w5_windows.py``: a 1-minute tumbling count per key, against Spark SS.

:mod:`.data` writes the events (global event-time order, 1 % out of order
within the watermark's bound) and the exact counts; :mod:`.latency` turns
read and arrival times into window latencies; :mod:`.ours` runs our pipeline
(``bench/w5_pipeline.py``) on local Spark; :mod:`.spark_peer` runs Spark
Structured Streaming's ``withWatermark`` + ``groupBy(window, key).count()``.
"""
