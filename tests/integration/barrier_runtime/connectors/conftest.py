"""Fixtures: S3 credentials in the environment.

The real brokers are ``nats_server`` (NATS JetStream, per module) and ``kafka_broker``
(Apache Kafka in KRaft mode, per session) in ``tests/conftest.py``.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The shared S3 server with its credentials in the environment (as a job would see them)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    return s3_server
