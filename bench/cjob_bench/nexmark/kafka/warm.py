"""Warm a freshly started broker before a measured run (``--warm-broker SECONDS``).

A broker started for the run begins cold: its JVM is not yet compiled, and the
transaction coordinator's and the group coordinator's internal topics are created and
loaded on first use, when clients are told "coordinator load in progress" and retry.
A broker that users run has been up for a long time. To tell the broker's warm-up
apart from the job's own, the run can first drive the broker the way the job will:
transactional producers (one per coordinator partition the ids hash to, and more)
committing small transactions into a scratch topic, a ``read_committed`` consumer
reading them back, and a consumer group committing offsets — for ``seconds``, then
the measured run starts on the warmed broker. The scratch topic is separate from the
run's, and the producers' transactional ids share no prefix with the job's.
"""

from __future__ import annotations

import time
from typing import Any

from barrier_runtime.connectors.kafka import create_topic

PRODUCERS = 8
"""Transactional ids used: enough that every coordinator partition is asked."""
MESSAGES_PER_TRANSACTION = 200


def warm_broker(bootstrap: str, seconds: float) -> dict[str, Any]:
    """Drive the broker for ``seconds``; what was done (transactions, records read)."""
    from confluent_kafka import Consumer, Producer  # noqa: PLC0415

    topic = f"warm-{int(time.time() * 1000)}"
    create_topic(bootstrap, topic, 2)
    producers = [
        Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-{i}"})
        for i in range(PRODUCERS)
    ]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-group",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    started = time.monotonic()
    first_transaction_s: float | None = None
    transactions = read = 0
    try:
        for producer in producers:
            producer.init_transactions(60)
        consumer.subscribe([topic])
        payload = b"x" * 100
        while time.monotonic() - started < seconds:
            for producer in producers:
                producer.begin_transaction()
                for _ in range(MESSAGES_PER_TRANSACTION):
                    producer.produce(topic, payload)
                producer.commit_transaction(30)
                transactions += 1
                if first_transaction_s is None:
                    first_transaction_s = time.monotonic() - started
            messages = consumer.consume(10_000, 0.1)
            read += len(messages)
            if messages:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()
        for producer in producers:
            producer.flush(10)
    return {
        "seconds": round(time.monotonic() - started, 2),
        "transactions": transactions,
        "records_read": read,
        "first_transaction_seconds": None
        if first_transaction_s is None
        else round(first_transaction_s, 2),
    }
