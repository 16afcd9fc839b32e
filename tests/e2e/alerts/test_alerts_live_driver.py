"""Whole-product alerting: a real Prometheus scrapes a running driver's and the operator's
``/metrics`` and evaluates the chart's alert rules while the job's checkpoint storage goes away and comes back.

* storage: a real SeaweedFS S3 server, reached through a TCP proxy the test can close
  (from the job's point of view the storage is down: connections are refused);
* the job: a keyed running count on the in-process executor with its checkpoints in that
  S3 store, served by the driver's real control API (``ControlServer``);
* Prometheus: Debian's ``prometheus`` with the chart's rules file (every ``for`` set to 0s
  and a 1 s evaluation interval so the test takes seconds, not minutes).

Closing the proxy makes every checkpoint fail with ``storage-failure`` while the job keeps
running, and ``CheckpointFailures`` must fire for this job; reopening it lets checkpoints
complete again and the alert must resolve.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import waiting
import yaml
from cjob_operator_testing.endpoint import OperatorEndpoint

from barrier_runtime.control.server import ControlServer
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import running_count_flow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "charts" / "checkpointed-operator" / "files" / "prometheus-rules.yaml"
NS, JOB, BUCKET = "alerts-e2e", "live-count", "cjob-tests"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TcpProxy:
    """Forwards a loopback port to ``target``; ``close()`` refuses and cuts every connection."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def api(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
        return json.load(reply)


def query(port: int, expr: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api(port, "/api/v1/query?query=" + urllib.parse.quote(expr))[
        "data"
    ]["result"]
    return found


def firing(port: int) -> set[str]:
    alerts = api(port, "/api/v1/alerts")["data"]["alerts"]
    return {
        a["labels"]["alertname"]
        for a in alerts
        if a["state"] == "firing" and a["labels"].get("job") == JOB
    }


@pytest.fixture
def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (scripts/install-test-tools.sh as root)")
    return binary


@pytest.fixture
def live_job(s3_server: Any, tmp_path: Path) -> Iterator[tuple[LocalExecutor, TcpProxy, int]]:
    host, port = s3_server.endpoint.removeprefix("http://").rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    proxy.open()
    url = f"s3://{BUCKET}/alerts-{time.time_ns()}?endpoint=http://127.0.0.1:{proxy.port}"
    store = CheckpointStore(
        open_object_store(
            url,
            access_key=s3_server.access_key,
            secret_key=s3_server.secret_key,
            create_bucket=True,
        ),
        f"{NS}/{JOB}",
    )
    executor = LocalExecutor(
        running_count_flow(
            TestingSink(),
            keys=50,
            events_per_key=None,
            partitions=2,
            batch_size=20,
            rate_per_partition=200,
        ),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.5, timeout=10, tolerable_failures=10_000),
    )
    runner = threading.Thread(target=executor.run, daemon=True)
    runner.start()
    assert executor.wait_running(60)
    with ControlServer(
        executor, port=free_port(), token="e2e-token", namespace=NS, job_name=JOB
    ) as server:
        yield executor, proxy, server.port
        proxy.close()
        proxy.open()  # let the job take its final savepoint
        with contextlib.suppress(Exception):
            executor.stop_with_savepoint(timeout=30)
        runner.join(timeout=60)
    proxy.close()


def test_checkpoint_failure_alert_fires_when_storage_stops_and_resolves(
    live_job: tuple[LocalExecutor, TcpProxy, int], prometheus_binary: str, tmp_path: Path
) -> None:
    executor, proxy, driver_port = live_job
    operator = OperatorEndpoint(free_port())
    operator.start()
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if "alert" in rule:
                rule["for"] = "0s"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    (tmp_path / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {
                    "scrape_interval": "1s",
                    "evaluation_interval": "1s",
                    "scrape_timeout": "900ms",
                },
                "rule_files": ["rules.yaml"],
                "scrape_configs": [
                    {
                        "job_name": "cjob-driver",
                        "honor_labels": True,
                        "static_configs": [{"targets": [f"127.0.0.1:{driver_port}"]}],
                    },
                    {
                        "job_name": "cjob-operator",
                        "honor_labels": True,
                        "static_configs": [{"targets": [f"127.0.0.1:{operator.port}"]}],
                    },
                ],
            }
        )
    )
    prom_port = free_port()
    with (tmp_path / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [
                prometheus_binary,
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:

            def explain() -> str:
                seen = query(prom_port, f'{{job="{JOB}", __name__=~"cjob_checkpoint.*"}}')
                return str([(r["metric"].get("__name__"), r["value"][1]) for r in seen])

            # Healthy: checkpoints complete, nothing fires.
            waiting.wait_until(
                lambda: bool(
                    query(prom_port, f'cjob_checkpoints_completed_total{{job="{JOB}"}} >= 2')
                ),
                60,
                "completed checkpoints scraped from the driver",
                interval=0.5,
                ignoring=(OSError, KeyError, ValueError),
                explain=explain,
            )
            waiting.wait_until(
                lambda: bool(query(prom_port, 'up{job="cjob-operator"} == 1')),
                60,
                "the operator scraped",
                interval=0.5,
                ignoring=(OSError, KeyError, ValueError),
            )
            assert "CheckpointFailures" not in firing(prom_port)

            # Storage stops: checkpoints fail, the job keeps running, the alert fires.
            proxy.close()
            waiting.wait_until(
                lambda: "CheckpointFailures" in firing(prom_port),
                60,
                "CheckpointFailures to fire",
                interval=0.5,
                ignoring=(OSError, KeyError, ValueError),
                explain=explain,
            )
            stats = executor.checkpoint_stats()
            assert stats.consecutive_failures >= 3
            assert stats.latest_failed is not None
            assert stats.latest_failed.failure_reason is not None
            assert stats.latest_failed.failure_reason.value == "storage-failure"
            assert executor.info().state.value == "RUNNING", "storage trouble must not kill the job"
            failed_by_reason = query(prom_port, f'cjob_checkpoints_failed_total{{job="{JOB}"}}')
            assert {r["metric"]["reason"] for r in failed_by_reason} >= {"storage-failure"}

            # Storage is back: checkpoints complete again and the alert resolves.
            completed_before = executor.checkpoint_stats().counts.completed
            proxy.open()
            waiting.wait_until(
                lambda: executor.checkpoint_stats().counts.completed > completed_before,
                60,
                "a completed checkpoint after storage came back",
                interval=0.5,
                ignoring=(OSError, KeyError, ValueError),
            )
            waiting.wait_until(
                lambda: "CheckpointFailures" not in firing(prom_port),
                90,
                "CheckpointFailures to resolve",
                interval=0.5,
                ignoring=(OSError, KeyError, ValueError),
                explain=explain,
            )
        finally:
            operator.close()
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
