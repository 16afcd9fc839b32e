"""A real Prometheus (Debian ``prometheus``) evaluates the chart's alert rules while scraping
the operator's real ``/metrics`` endpoint (``cjob_operator.main.app``) the documented way
(scrape job ``cjob-operator``, ``honor_labels: true``).

Checkpoint failures, a stale checkpoint and a failed job are put into the operator's
metrics through its ``metrics`` module, as a reconcile would; the alerts must fire, and
resolve when the checkpoints complete again and the operator's target comes back. The
rules are the chart's file with every ``for`` set to 0s, so firing takes seconds.
(A live driver with its storage stopped is the whole-product e2e's job.)
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
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

from cjob_operator import metrics
from cjob_operator.model.enums import Phase

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "charts" / "checkpointed-operator" / "files" / "prometheus-rules.yaml"
NS = "live-prom"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, OperatorEndpoint]]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip(
            "prometheus is not installed (scripts/install-test-tools.sh as root, "
            "or apt-get install prometheus)"
        )
    work = tmp_path_factory.mktemp("prometheus")
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if "alert" in rule:
                rule["for"] = "0s"
    (work / "rules.yaml").write_text(yaml.safe_dump(rules))
    endpoint = OperatorEndpoint(free_port())
    endpoint.start()
    (work / "prometheus.yml").write_text(
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
                        "job_name": "cjob-operator",
                        "honor_labels": True,
                        "static_configs": [{"targets": [f"127.0.0.1:{endpoint.port}"]}],
                    }
                ],
            }
        )
    )
    port = free_port()
    log = (work / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        waiting.wait_until(
            lambda: (
                urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2).status == 200
            ),
            45,
            "Prometheus ready",
            interval=0.5,
            ignoring=(OSError,),
        )
        waiting.wait_until(
            lambda: bool(query(port, 'up{job="cjob-operator"} == 1')),
            45,
            "a first scrape of the operator",
            interval=0.5,
            ignoring=(OSError,),
        )
        yield port, endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
        endpoint.close()


def query(port: int, expr: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api(port, "/api/v1/query?query=" + urllib.parse.quote(expr))[
        "data"
    ]["result"]
    return found


def firing(port: int) -> set[tuple[str, str]]:
    """(alertname, job) of every firing alert about this test's namespace (or the operator)."""
    alerts = api(port, "/api/v1/alerts")["data"]["alerts"]
    return {
        (a["labels"]["alertname"], a["labels"].get("job", ""))
        for a in alerts
        if a["state"] == "firing" and a["labels"].get("namespace", NS) == NS
    }


def diagnostics(port: int) -> str:
    """What Prometheus sees, for a failure message."""
    parts = []
    for expr in ("up", f'{{namespace="{NS}"}}', "ALERTS"):
        found = query(port, expr)
        parts.append(f"{expr}: {[(r['metric'], r['value'][1]) for r in found]}")
    targets = api(port, "/api/v1/targets")["data"]["activeTargets"]
    parts.append(f"targets: {[(t['health'], t['lastError']) for t in targets]}")
    return "\n".join(parts)


def test_checkpoint_failures_fire_and_resolve(prometheus: tuple[int, OperatorEndpoint]) -> None:
    port, _ = prometheus
    job = "storage-down"
    metrics.set_phase(NS, job, Phase.RUNNING)
    metrics.LAST_COMPLETED.labels(NS, job).set(time.time())
    completed = metrics.CHECKPOINTS_COMPLETED.labels(NS, job)
    failed = metrics.CHECKPOINTS_FAILED.labels(NS, job, "STORAGE_FAILURE")
    completed.inc(0)
    failed.inc(0)
    # Prometheus must have scraped the counters at zero, so increase() sees every failure.
    waiting.wait_until(
        lambda: bool(query(port, f'cjob_checkpoints_failed_total{{job="{job}"}} == 0')),
        45,
        "the failure counter scraped at zero",
        interval=0.5,
        ignoring=(OSError,),
    )
    failed.inc(6)
    waiting.wait_until(
        lambda: ("CheckpointFailures", job) in firing(port),
        45,
        "CheckpointFailures firing",
        interval=0.5,
        ignoring=(OSError,),
        explain=lambda: diagnostics(port),
    )
    # storage back: checkpoints complete again, the failed share drops below one half
    completed.inc(30)
    metrics.LAST_COMPLETED.labels(NS, job).set(time.time())
    waiting.wait_until(
        lambda: ("CheckpointFailures", job) not in firing(port),
        45,
        "CheckpointFailures resolved",
        interval=0.5,
        ignoring=(OSError,),
    )


def test_stale_checkpoint_and_failed_job_fire(prometheus: tuple[int, OperatorEndpoint]) -> None:
    port, _ = prometheus
    metrics.set_phase(NS, "stale", Phase.RUNNING)
    metrics.LAST_COMPLETED.labels(NS, "stale").set(time.time() - 3600)
    metrics.set_phase(NS, "suspended", Phase.SUSPENDED)
    metrics.LAST_COMPLETED.labels(NS, "suspended").set(time.time() - 3600)
    metrics.set_phase(NS, "given-up", Phase.FAILED)
    waiting.wait_until(
        lambda: {("CheckpointStale", "stale"), ("JobFailed", "given-up")} <= firing(port),
        45,
        "CheckpointStale and JobFailed firing",
        interval=0.5,
        ignoring=(OSError,),
    )
    assert ("CheckpointStale", "suspended") not in firing(port)
    metrics.LAST_COMPLETED.labels(NS, "stale").set(time.time())
    metrics.set_phase(NS, "given-up", Phase.RUNNING)
    waiting.wait_until(
        lambda: not {("CheckpointStale", "stale"), ("JobFailed", "given-up")} & firing(port),
        45,
        "CheckpointStale and JobFailed resolved",
        interval=0.5,
        ignoring=(OSError,),
    )


def test_operator_down_fires_while_its_endpoint_is_gone(
    prometheus: tuple[int, OperatorEndpoint],
) -> None:
    port, endpoint = prometheus
    assert ("OperatorDown", "cjob-operator") not in firing(port)
    endpoint.stop()
    try:
        waiting.wait_until(
            lambda: ("OperatorDown", "cjob-operator") in firing(port),
            45,
            "OperatorDown firing",
            interval=0.5,
            ignoring=(OSError,),
        )
    finally:
        endpoint.start()
    waiting.wait_until(
        lambda: ("OperatorDown", "cjob-operator") not in firing(port),
        45,
        "OperatorDown resolved",
        interval=0.5,
        ignoring=(OSError,),
    )
