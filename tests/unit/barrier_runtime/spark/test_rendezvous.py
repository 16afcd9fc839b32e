"""The early rendezvous of a barrier task: allGather starts before the worker runs."""

from __future__ import annotations

import socket
import threading

import pytest

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import config, message_codec, pipeline, rendezvous, stage


def test_gathers_the_listener_address_while_the_caller_goes_on() -> None:
    release = threading.Event()
    calls: list[str] = []

    def all_gather(address: str) -> list[str]:
        calls.append(address)
        release.wait(5)
        return [address, "127.0.0.1:9"]

    early = rendezvous.start(all_gather, "127.0.0.1", 2)
    try:
        port = early.listener.getsockname()[1]
        assert early.address == f"127.0.0.1:{port}"
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the listener already accepts peers
        release.set()
        assert early.all_gather(early.address) == [early.address, "127.0.0.1:9"]
        assert calls == [early.address]
    finally:
        early.close()


def test_a_failed_gather_is_raised_to_the_worker() -> None:
    def all_gather(address: str) -> list[str]:
        raise RuntimeError("another task failed")

    early = rendezvous.start(all_gather, "127.0.0.1", 2)
    try:
        with pytest.raises(RuntimeError, match="another task failed"):
            early.all_gather(early.address)
    finally:
        early.close()


def test_the_worker_must_use_the_gathered_address() -> None:
    early = rendezvous.start(lambda a: [a], "127.0.0.1", 1)
    try:
        with pytest.raises(ValueError, match="was gathered"):
            early.all_gather("127.0.0.1:1")
    finally:
        early.close()


def test_the_task_closure_carries_the_config_as_bytes() -> None:
    """Unpickling the task must not import the runtime: the config travels as bytes."""
    cfg = _config()
    task = stage.task_for(cfg)
    config_bytes, host, parallelism = task.args  # type: ignore[attr-defined]
    assert isinstance(config_bytes, bytes)
    assert (host, parallelism) == (cfg.host, cfg.parallelism)
    assert message_codec.decode_config(config_bytes) == cfg


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
