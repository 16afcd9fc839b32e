"""Fixtures: a real Apache Kafka broker (KRaft, one node) on loopback, one per session.

The broker's jars come from Maven Central through ``scripts/kafka-fetch.sh`` (seconds
on a warm cache; the first time it fetches about 45 MB). Where they cannot be fetched
the Kafka tests skip with the reason, or fail under CI (``CI=true``), where they must run.
The NATS JetStream server is ``nats_server`` in ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from collections.abc import Iterator
from typing import NoReturn

import pytest

from barrier_runtime.connectors import embedded_kafka

REPO = pathlib.Path(__file__).resolve().parents[4]


def _missing(why: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def kafka_libs() -> pathlib.Path:
    """The broker's jars, fetched by ``scripts/kafka-fetch.sh`` if this machine lacks them."""
    if override := os.environ.get(embedded_kafka.LIBS_ENV_VAR):
        return pathlib.Path(override)
    try:
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / "kafka-fetch.sh")],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _missing("scripts/kafka-fetch.sh did not fetch the Kafka broker's jars within 600 s")
    if done.returncode != 0:
        _missing(f"scripts/kafka-fetch.sh failed: {done.stderr.strip()[-600:]}")
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def kafka_broker(kafka_libs: pathlib.Path) -> Iterator[embedded_kafka.EmbeddedKafkaBroker]:
    """A real Apache Kafka broker for the session; tests keep to topics of their own."""
    pytest.importorskip("confluent_kafka", reason="the Kafka connector needs confluent-kafka")
    with embedded_kafka.EmbeddedKafkaBroker(libs=kafka_libs) as broker:
        print(f"Apache Kafka {broker.version} (KRaft) at {broker.bootstrap_servers}")
        yield broker


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The shared S3 server with its credentials in the environment (as a job would see them)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    return s3_server
