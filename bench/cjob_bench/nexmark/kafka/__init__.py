"""Nexmark on a real Kafka broker: sustainable throughput and latency to visible output (ours).

* :mod:`.feed` (its own process) writes the Nexmark events of a
  :class:`~cjob_bench.nexmark.config.NexmarkConfig` into Kafka at a paced rate,
  each record stamped with its creation time (the Kafka record timestamp, the
  wall clock when it was handed to the producer);
* :mod:`.pipeline` is our job as a pipeline file: a query of
  :func:`cjob_bench.nexmark.queries.build`'s table over Kafka sources, into the
  transactional Kafka sink, exactly-once aligned checkpoints;
* :mod:`.watch` (its own process) reads the output topic ``read_committed``
  and times every record it sees;
* :mod:`.run` is one measured run (topics, job, feed, watch, the lag series),
  :mod:`.method` the verdicts and the figures (sustained or not, latency, the search),
  :mod:`.profile` where a profile run's latency goes, :mod:`.spark_system` Spark
  Structured Streaming as the system under test, :mod:`.cli` the ``kafka-sustain``
  and ``kafka-latency`` commands.

Topics: one per kind (``{prefix}-persons``, ``-auctions``, ``-bids``), P
partitions each, generator ``g``'s events in partition ``g``. One topic per
kind because every query reads one or two kinds (q0-q2, q5, q7, q11, q12 read
only bids): with one mixed topic every bid query would read and parse the 8 %
of events it drops and need a filter step the file version does not have, and
each kind keeps its own schema, as the file layout (:mod:`..files`) does.
Each record's value is the event as one JSON object with exactly the columns
and values of the Parquet files for the same config.
"""
