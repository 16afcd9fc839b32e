"""SIGTERM stops a driver with a final savepoint, and the next start resumes from it.

Kubernetes stops the driver pod (``kubectl delete pod``, eviction, drain) with
SIGTERM; the driver must use its grace period for a final savepoint
(:mod:`barrier_runtime.driver.graceful_stop`), exit 0, and the next start must
restore from that savepoint with no flag (it is the newest snapshot). Real Spark
(local mode, 3 worker processes), checkpoints and output in the real S3 server:

* ``cjob run --json``: SIGTERM after three completed checkpoints, then run again;
* ``cjob driver`` from a job.json that carries ``driver.terminationGracePeriodSeconds``.

The output of both runs together must be exactly the analytic output of the
running count: lost = duplicated = out-of-order = 0.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid

import pytest
import waiting
from barrier_runtime_testing import spark_harness as h

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE, P = h.GENERATOR_PIPELINE, h.P
TOTAL = h.KEYS * h.EVENTS_PER_KEY
EXPECTED = [
    {"key": f"k{k}", "seq": s, "count": s + 1}
    for k in range(h.KEYS)
    for s in range(h.EVENTS_PER_KEY)
]


def _run_command(store_url: str, out_url: str, rate: float | None) -> list[str]:
    return [
        *h.CLI,
        "run",
        "--json",
        "-p",
        str(P),
        "--checkpoint-interval",
        "0.5",
        "--store",
        store_url,
        "--job",
        "default/sigterm",
        "--restart-backoff",
        "0.2",
        "--stop-grace-period",
        "30",
        PIPELINE,
        "--",
        *h.generator_args(out_url, rate=rate),
    ]


def test_cjob_run_stops_with_a_savepoint_on_sigterm_and_resumes_from_it(s3_env, tmp_path) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    first = h.spawn(_run_command(store_url, out_url, rate=300), tmp_path)
    try:
        events = h.read_events(first, h.completed_checkpoints(3), timeout=180)
        os.kill(first.pid, signal.SIGTERM)  # the driver process only, as the kubelet does
        events += h.finish(first, timeout=60)
    finally:
        h.kill_group(first)
    summary = events[-1]
    checkpoints = [
        e["id"]
        for e in events
        if e.get("event") == "checkpoint"
        and e["status"] == "completed"
        and e["kind"] == "checkpoint"
    ]
    assert summary["status"] == "stopped" and summary["stopped_by"] == "SIGTERM", summary
    assert "/savepoints/sp-" in summary["savepoint"], summary
    assert summary["savepoint_id"] > max(checkpoints), (summary, checkpoints)
    assert 0 < len(h.published(out_url)) < TOTAL, "stopped midway, with some output committed"

    second = h.spawn(_run_command(store_url, out_url, rate=None), tmp_path)
    try:
        resumed = h.finish(second, timeout=300)[-1]
    finally:
        h.kill_group(second)
    assert resumed["status"] == "finished", resumed
    assert resumed["restored_from"][0] == summary["savepoint_id"], resumed
    h.assert_exactly_once(EXPECTED, out_url)


def _job_json(s3_env, run: str, out_url: str, rate: float | None, port: int) -> dict:
    return {
        "formatVersion": 1,
        "job": {"namespace": "default", "name": "term", "uid": "u1"},
        "pipeline": {"file": PIPELINE, "args": h.generator_args(out_url, rate=rate)},
        "parallelism": P,
        "maxParallelism": 128,
        "checkpointing": {"intervalSeconds": 0.5, "timeoutSeconds": 60, "mode": "ExactlyOnce"},
        "storage": {
            "endpoint": s3_env.endpoint,
            "bucket": h.BUCKET,
            "root": f"{run}/default/term",
            "accessKeyEnv": "AWS_ACCESS_KEY_ID",
            "secretKeyEnv": "AWS_SECRET_ACCESS_KEY",
        },
        "restartPolicy": {
            "maxRestarts": 3,
            "windowSeconds": 600,
            "backoff": {"initialSeconds": 0.2, "maxSeconds": 1},
        },
        "control": {"port": port, "tokenEnv": "CJOB_CONTROL_TOKEN"},
        "driver": {"terminationGracePeriodSeconds": 30},
        "sparkConf": {"spark.master": "k8s://https://kubernetes.default.svc"},
    }


def _driver(tmp_path, doc: dict, token: str) -> subprocess.Popen[str]:
    config_file = tmp_path / f"job-{uuid.uuid4().hex[:6]}.json"
    config_file.write_text(json.dumps(doc))
    env = {**os.environ, "CJOB_CONTROL_TOKEN": token, "CJOB_SPARK_MASTER": f"local[{P}]"}
    return subprocess.Popen(
        [*h.CLI, "driver", "--config", str(config_file)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_driver_command_stops_with_a_savepoint_on_sigterm(s3_env, tmp_path) -> None:
    run = uuid.uuid4().hex[:8]
    out_url = s3_env.url(h.BUCKET, f"{run}/out")
    port, token = h.free_port(), uuid.uuid4().hex
    base = f"http://127.0.0.1:{port}"
    proc = _driver(tmp_path, _job_json(s3_env, run, out_url, 300, port), token)
    try:
        waiting.wait_until(
            lambda: (
                h.http("GET", f"{base}/v1/checkpoints", token)[1]
                .get("counts", {})
                .get("completed", 0)
                >= 2
            ),
            180,
            "two completed checkpoints",
            ignoring=(OSError,),
            interval=0.2,
        )
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        h.kill_group(proc)
    assert proc.returncode == 0, err[-3000:]
    assert "SIGTERM: final savepoint" in err and "stopped by SIGTERM" in err, err[-3000:]
    assert len(h.published(out_url)) < TOTAL

    again = _driver(tmp_path, _job_json(s3_env, run, out_url, None, h.free_port()), token)
    try:
        _, err2 = again.communicate(timeout=300)
    finally:
        h.kill_group(again)
    assert again.returncode == 0, err2[-3000:]
    saved = err.split("SIGTERM: final savepoint ", 1)[1].split()[0]
    assert f"job finished: restored from {saved}," in err2, err2[-3000:]
    h.assert_exactly_once(EXPECTED, out_url)
