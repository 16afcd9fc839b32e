"""Steps of the control API tests: a LocalExecutor job behind a real ControlServer, and
the calls the tests make on it (trigger and wait, scrape /metrics)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import waiting
from prometheus_client.parser import text_string_to_metric_families

from barrier_runtime import control_document as contract
from barrier_runtime.control.job import JobState
from barrier_runtime.control.server import ControlServer
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import running_count_flow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import JobResult, LocalExecutor, TestingSink

TOKEN = "t0ken-for-tests-only"
NAMESPACE = "team-a"


@dataclass
class Running:
    executor: LocalExecutor
    server: ControlServer
    client: Any
    thread: threading.Thread
    results: list[JobResult]


def start(flow_sink: TestingSink, root: Any, make_client: Any, **job: Any) -> Running:
    store = CheckpointStore(open_object_store(str(root)), "default/api")
    executor = LocalExecutor(
        running_count_flow(flow_sink, **job),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=3600),
    )
    server = ControlServer(
        executor, token=TOKEN, store_describe=store.describe(), namespace=NAMESPACE
    ).start()
    results: list[JobResult] = []
    thread = threading.Thread(target=lambda: results.append(executor.run()), daemon=True)
    thread.start()
    assert executor.wait_running(30)
    return Running(executor, server, make_client(server.url, TOKEN), thread, results)


def finish(job: Running) -> None:
    if job.executor.info().state is JobState.RUNNING:
        job.executor.stop_with_savepoint(timeout=30)
    job.thread.join(30)
    job.server.stop()


def wait_finished(
    client: Any, checkpoint_id: int, timeout: float = 30
) -> contract.CheckpointEntryDoc:
    """The checkpoint's entry (read with the contract) once it completed or failed."""

    def finished() -> contract.CheckpointEntryDoc | None:
        reply = client.get(f"/v1/checkpoints/{checkpoint_id}")
        assert reply.status == 200, reply.text
        entry = contract.parse_entry(reply.json)
        return entry if entry["status"] != "in-progress" else None

    return waiting.wait_until(
        finished, timeout, f"checkpoint {checkpoint_id} to finish", interval=0.02
    )


def accepted(client: Any, body: Any = None, raw: bytes | None = None) -> Any:
    """A trigger reply, retried while another checkpoint is in flight (409)."""

    def post() -> Any:
        reply = client.post("/v1/checkpoints", body, raw=raw)
        if reply.status == 409:
            assert reply.json["reason"] == "too-many-pending", reply.text
            return None
        return reply

    return waiting.wait_until(post, 30, "the trigger accepted", interval=0.02)


def trigger(client: Any, kind: str = "checkpoint") -> contract.CheckpointEntryDoc:
    """Trigger and wait until finished (retrying while another checkpoint is in flight)."""
    reply = accepted(client, {"kind": kind})
    assert reply.status == 202, reply.text
    triggered = contract.parse_triggered(reply.json)
    assert triggered["kind"] == kind
    assert reply.headers["Location"] == f"/v1/checkpoints/{triggered['id']}"
    return wait_finished(client, triggered["id"])


def scrape(client: Any) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    reply = client.get("/metrics")
    assert reply.status == 200, reply.text
    assert reply.headers["Content-Type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def one(
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]], name: str, **labels: str
) -> float:
    want = {"job": "running-count", "namespace": NAMESPACE, **labels}
    found = [v for k, v in samples.get(name, {}).items() if dict(k) == want]
    assert len(found) == 1, (name, want, samples.get(name))
    return found[0]
