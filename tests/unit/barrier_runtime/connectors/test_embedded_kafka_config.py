"""Where the embedded Kafka broker's jars come from, and its settings (no JVM, no broker)."""

from __future__ import annotations

import os
import pathlib
import time
import uuid

import pytest

from barrier_runtime.connectors import embedded_kafka
from barrier_runtime.connectors.errors import EmbeddedBrokerError


def libs_dir(root: pathlib.Path, version: str) -> pathlib.Path:
    libs = root / f"{version}-abc123" / "libs"
    libs.mkdir(parents=True)
    (libs / f"kafka_2.13-{version}.jar").write_bytes(b"")
    (libs / f"kafka-clients-{version}.jar").write_bytes(b"")
    return libs


@pytest.fixture
def cache(tmp_path, monkeypatch) -> pathlib.Path:
    monkeypatch.setenv("CJOB_CACHE", str(tmp_path))
    monkeypatch.delenv(embedded_kafka.LIBS_ENV_VAR, raising=False)
    return tmp_path / "kafka"


def test_no_jars_anywhere_says_to_run_the_fetch_script(cache) -> None:
    with pytest.raises(EmbeddedBrokerError, match=r"not found .*run scripts/kafka-fetch\.sh"):
        embedded_kafka.find_kafka_libs()


def test_the_newest_fetched_libs_directory_wins(cache) -> None:
    old = libs_dir(cache, "4.1.0")
    new = libs_dir(cache, "4.3.1")
    past = time.time() - 3600
    os.utime(new, (past, past))  # fetched before the other one was confirmed
    assert embedded_kafka.find_kafka_libs() == old
    assert embedded_kafka.kafka_version(old) == "4.1.0"


def test_the_environment_variable_names_the_jars(cache, tmp_path, monkeypatch) -> None:
    libs = libs_dir(tmp_path / "elsewhere", "4.3.1")
    monkeypatch.setenv(embedded_kafka.LIBS_ENV_VAR, str(libs))
    assert embedded_kafka.find_kafka_libs() == libs


def test_an_environment_variable_without_the_broker_jar_is_one_clear_sentence(
    cache, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(embedded_kafka.LIBS_ENV_VAR, str(tmp_path))
    with pytest.raises(EmbeddedBrokerError) as raised:
        embedded_kafka.find_kafka_libs()
    message = str(raised.value)
    assert "holds no kafka_2.13-<version>.jar" in message and "kafka-fetch.sh" in message
    assert "\n" not in message


def test_one_node_settings_and_overrides() -> None:
    props = embedded_kafka.server_properties(
        "127.0.0.1", 9092, 9093, pathlib.Path("/data"), **{"num.partitions": "3"}
    )
    assert props["process.roles"] == "broker,controller"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["auto.create.topics.enable"] == "false"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["num.partitions"] == "3"


def test_cluster_ids_are_fresh() -> None:
    assert embedded_kafka.new_cluster_id() != embedded_kafka.new_cluster_id()


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kafka-storage format --cluster-id -X…`` reads the id as an option and fails."""
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=bytes(16))])
    monkeypatch.setattr(embedded_kafka.uuid, "uuid4", lambda: next(drawn))
    assert embedded_kafka.new_cluster_id() == "A" * 22
