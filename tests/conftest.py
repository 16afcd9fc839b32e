"""Fixtures shared by every test folder: one real S3 server (SeaweedFS) per session, and a
real NATS JetStream server per module that asks for one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from barrier_runtime.connectors import embedded_nats
from barrier_runtime.storage import embedded

S3_BUCKET = "cjob-tests"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[embedded.EmbeddedS3Server]:
    """A real S3 server (SeaweedFS ``weed mini``) on loopback, stopped after the session."""
    with embedded.EmbeddedS3Server(buckets=[S3_BUCKET]) as server:
        yield server


@pytest.fixture(scope="module")
def nats_server() -> Iterator[embedded_nats.EmbeddedNatsServer]:
    """A real ``nats-server -js`` on loopback for the module (skipped without the binary)."""
    pytest.importorskip("nats", reason="the NATS connector needs nats-py")
    try:
        embedded_nats.find_nats_server_binary()
    except embedded_nats.errors.EmbeddedBrokerError as exc:
        pytest.skip(str(exc))
    with embedded_nats.EmbeddedNatsServer() as server:
        yield server
