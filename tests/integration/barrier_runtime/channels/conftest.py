"""Two connected worker networks in one process, over loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from barrier_runtime_testing import channels as testing

from barrier_runtime.channels import network

TOKEN = testing.TOKEN


@pytest.fixture
def pair() -> Iterator[tuple[network.WorkerNetwork, network.WorkerNetwork]]:
    a = network.WorkerNetwork(0, 2, TOKEN)
    b = network.WorkerNetwork(1, 2, TOKEN)
    peers = {0: a.address, 1: b.address}
    a.connect(peers)
    b.connect(peers)
    a.wait_for_peers(timeout=5)
    b.wait_for_peers(timeout=5)
    yield a, b
    a.abort()
    b.abort()
