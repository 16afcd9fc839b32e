"""Fixtures shared by every test folder: one real S3 server (SeaweedFS) per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from barrier_runtime.storage import embedded

S3_BUCKET = "cjob-tests"


@pytest.fixture(scope="session")
def s3_server() -> Iterator[embedded.EmbeddedS3Server]:
    """A real S3 server (SeaweedFS ``weed mini``) on loopback, stopped after the session."""
    with embedded.EmbeddedS3Server(buckets=[S3_BUCKET]) as server:
        yield server
