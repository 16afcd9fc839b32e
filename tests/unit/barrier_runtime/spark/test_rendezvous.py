"""The worker's side of the rendezvous: the peer listener is bound before the worker runs."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import config, message_codec, pipeline, rendezvous, stage


def test_the_listener_accepts_peers_before_the_worker_takes_it_over() -> None:
    peers = rendezvous.listen("127.0.0.1", 2)
    try:
        port = peers.listener.getsockname()[1]
        assert peers.address == f"127.0.0.1:{port}"
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # queued in the backlog until the worker's network accepts it
    finally:
        peers.close()


def test_ipv6_addresses_are_bracketed() -> None:
    assert rendezvous.format_address("::1", 4000) == "[::1]:4000"
    assert rendezvous.format_address("10.0.0.1", 4000) == "10.0.0.1:4000"


def test_the_task_closure_carries_the_config_as_bytes() -> None:
    """Unpickling the task must not import the runtime: the config travels as bytes."""
    cfg = _config()
    task = stage.task_for(cfg)
    config_bytes, host, parallelism = task.args  # type: ignore[attr-defined]
    assert isinstance(config_bytes, bytes)
    assert (host, parallelism) == (cfg.host, cfg.parallelism)
    assert message_codec.decode_config(config_bytes) == cfg


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_fresh_process_knows_when_it_started() -> None:
    code = (
        "import time; from barrier_runtime.spark import stage; "
        "print(time.time() - stage.process_start_time())"
    )
    age = float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert 0.0 <= age < 10.0  # the interpreter's start-up, at ~10 ms resolution


def _config() -> config.WorkerConfig:
    return config.WorkerConfig(
        attempt=1,
        secret=b"s",
        driver_address="127.0.0.1:1",
        pipeline=pipeline.PipelineRef.parse("barrier_runtime.demo", []),
        parallelism=2,
        fingerprint="f",
        checkpoint=CheckpointConfig(),
        store=config.StoreRef("/tmp/x", "j"),
        restore_point=None,
        channel_capacity=8,
        host="127.0.0.1",
        crashes=(),
    )
