"""W4 on Kafka: end-to-end latency of ours (exactly-once) against Spark Structured Streaming.

One input topic (P partitions) is fed live by :mod:`.producer` (a separate process) at a fixed
rate with the same deterministic records in every run; each system reads it, applies the same
stateless transform (:mod:`.records`) and writes an output topic; :mod:`.consumer` (a separate
process, ``read_committed``) takes each output record's latency as the wall-clock instant it
receives it minus the producer's timestamp of the input record it came from. :mod:`.ours` runs
our runtime (exactly-once, aligned or unaligned checkpoints), :mod:`.spark_peer` Spark in
real-time mode or with a micro-batch trigger; :mod:`.bench` interleaves them over rates and
repeats; :mod:`.report` summarises (medians of repeats) and renders the README table.
"""
