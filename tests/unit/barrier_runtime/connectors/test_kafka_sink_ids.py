"""The Kafka sink's transactional ids: stable per writer, distinct per topic (no broker)."""

from __future__ import annotations

from barrier_runtime.connectors.kafka import KafkaSink


def test_writers_of_two_topics_with_the_same_step_never_share_a_transactional_id() -> None:
    # a shared id would let one job's commit fence the other job's open transaction
    a, b = KafkaSink("h:9092", "orders"), KafkaSink("h:9092", "payments")
    assert a.transactional_id("out", 0) != b.transactional_id("out", 0)
    assert a.transactional_id("out", 0) == KafkaSink("h:9092", "orders").transactional_id("out", 0)
    assert a.transactional_id("out", 0) != a.transactional_id("out", 1)


def test_an_explicit_prefix_is_kept() -> None:
    sink = KafkaSink("h:9092", "orders", transactional_id_prefix="team-a")
    assert sink.transactional_id("out", 2) == "team-a-out-2"
