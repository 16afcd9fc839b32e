"""W4 on Kafka: end-to-end latency of ours (exactly-once) against Spark Structured Streaming.

One input topic (P partitions) is fed live by :mod:`.producer` (a separate process) at a fixed
rate with the same deterministic records in every run (:mod:`.records`); each system reads it,
applies the same stateless transform (:func:`.pipeline.transform`) and writes an output topic;
:mod:`.consumer` (a separate process, ``read_committed``) takes each output record's latency as
the wall-clock instant it receives it minus the producer's timestamp of the input record it
came from. :mod:`.ours` runs our runtime (:mod:`.pipeline`; exactly-once, aligned or unaligned
checkpoints), :mod:`cjob_bench.peers.spark.kafka` Spark in real-time mode or with a micro-batch trigger;
:mod:`.children` runs those processes; :mod:`.runs` is one measured run, :mod:`.bench` the
sweep over rates and interleaved repeats, :mod:`.report` the summary (medians of repeats, the
README table) and :mod:`.facts` the machine and versions. ``python -m cjob_bench run W4-kafka`` (:mod:`.main`) is the command.
"""
