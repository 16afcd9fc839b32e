"""The driver's control API (DESIGN §4.9) on real Spark (local mode, 3 worker processes).

The job is the generator's keyed running count with the exactly-once file sink,
checkpoints and output in the real S3 server.

* ``cjob run --control-port 0`` (token from ``CJOB_CONTROL_TOKEN``) announces its
  control URL as a JSON line; every endpoint answers (401 without or with a wrong
  token); ``POST /v1/stop {"savepoint": true}`` returns the savepoint's path; a new
  ``cjob run --restore-from PATH`` resumes it and is stopped with a savepoint again;
  a third ``cjob run --restore-from ID`` resumes that one by id and finishes.
* ``cjob driver`` from an operator-style job.json: checkpoints only on request,
  stop with a savepoint, and a new run restoring that savepoint.

The output of the whole chain must be exactly the crash-free output: lost =
duplicated = out-of-order = 0.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid

import pytest
import waiting
from barrier_runtime_testing import spark_harness as h
from prometheus_client.parser import text_string_to_metric_families

from barrier_runtime import control_document as contract
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import config, driver, pipeline

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE, P = h.GENERATOR_PIPELINE, h.P
TOTAL = h.KEYS * h.EVENTS_PER_KEY
PROTECTED = [
    ("GET", "/v1/job", None),
    ("GET", "/v1/checkpoints", None),
    ("GET", "/v1/checkpoints/1", None),
    ("POST", "/v1/checkpoints", {"kind": "checkpoint"}),
    ("POST", "/v1/stop", {"savepoint": True}),
]


def _control_url(proc: subprocess.Popen[str]) -> str:
    events = h.read_events(proc, lambda event, _: event["event"] == "control", timeout=240)
    control = events[-1]
    assert control["authenticated"] is True, control
    url: str = control["url"]
    waiting.wait_until(
        lambda: h.http("GET", f"{url}/readyz")[0] == 200,
        120,
        "the job to be ready",
        ignoring=(OSError,),
        interval=0.2,
    )
    return url


def _trigger(base: str, token: str, kind: str) -> dict:
    """Trigger a checkpoint (retrying while a periodic one is in flight); wait until it ends."""
    answers: list[tuple[int, dict]] = []

    def accepted() -> bool:
        answers.append(h.http("POST", f"{base}/v1/checkpoints", token, {"kind": kind}))
        status, body = answers[-1]
        assert status in (202, 409), body
        return status == 202

    waiting.wait_until(accepted, 60, f"a {kind} to be accepted", ignoring=(OSError,), interval=0.2)
    checkpoint_id = answers[-1][1]["id"]
    entry: dict = {}

    def ended() -> bool:
        status, doc = h.http("GET", f"{base}/v1/checkpoints/{checkpoint_id}", token)
        assert status == 200, doc
        entry.update(doc)
        return doc["status"] != "in-progress"

    waiting.wait_until(
        ended, 60, f"{kind} {checkpoint_id} to end", ignoring=(OSError,), interval=0.2
    )
    assert entry["status"] == "completed" and entry["kind"] == kind, entry
    return entry


def _every_endpoint_answers(base: str, token: str) -> None:
    assert h.http("GET", f"{base}/healthz") == (200, {"status": "ok"})
    status, ready = h.http("GET", f"{base}/readyz")
    assert status == 200 and ready["state"] == "RUNNING", ready
    for method, path, body in PROTECTED:
        for wrong in (None, "not-the-token"):
            status, doc = h.http(method, base + path, wrong, body)
            assert status == 401 and token not in json.dumps(doc), (method, path, wrong, doc)

    status, raw = h.http("GET", f"{base}/v1/job", token)
    job = contract.parse_job(raw)
    assert status == 200 and job["name"] == "running-count", job
    assert (job["state"], job["parallelism"], job["ready"]) == ("RUNNING", P, True), job
    assert job["restored_from"] is None and 0 < time.time() - job["start_timestamp"] < 600
    assert 0 < job["startup_seconds"] < 120, job  # the stage submitted to every worker running

    checkpoint = _trigger(base, token, "checkpoint")
    assert "/checkpoints/chk-" in checkpoint["path"] and checkpoint["size"] > 0, checkpoint
    savepoint = _trigger(base, token, "savepoint")
    assert "/savepoints/sp-" in savepoint["path"], savepoint
    status, listing = h.http("GET", f"{base}/v1/checkpoints", token)
    assert status == 200 and listing["counts"]["completed"] >= 2, listing["counts"]
    assert listing["latest"]["savepoint"]["id"] == savepoint["id"]
    assert {checkpoint["id"], savepoint["id"]} <= {e["id"] for e in listing["history"]}
    status, missing = h.http("GET", f"{base}/v1/checkpoints/999999", token)
    assert status == 404 and "999999" in missing["error"], missing

    status, text = h.http("GET", f"{base}/metrics")
    assert status == 200 and token not in text
    samples = {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert samples["cjob_job_up"] == 1 and samples["cjob_checkpoints_completed_total"] >= 2
    assert samples["cjob_last_completed_checkpoint_id"] >= savepoint["id"]


def _stop_with_savepoint(base: str, token: str) -> dict:
    status, stopped = h.http("POST", f"{base}/v1/stop", token, {"savepoint": True})
    assert status == 200, stopped
    assert "/savepoints/sp-" in stopped["path"] and stopped["kind"] == "savepoint", stopped
    return stopped


def _run_command(store_url: str, out_url: str, *options: str, rate: float | None) -> list[str]:
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
        "default/ctl-run",
        "--restart-backoff",
        "0.2",
        *options,
        PIPELINE,
        "--",
        *h.generator_args(out_url, rate=rate),
    ]


def test_cjob_run_control_api_stop_with_savepoint_and_restore_by_path_then_id(
    s3_env, crash_free, tmp_path
) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    token = uuid.uuid4().hex
    env = {"CJOB_CONTROL_TOKEN": token}

    # 1. every endpoint on the running job, then stop with a savepoint
    first = h.spawn(
        _run_command(store_url, out_url, "--control-port", "0", rate=300), tmp_path, env
    )
    try:
        base = _control_url(first)
        _every_endpoint_answers(base, token)
        first_stop = _stop_with_savepoint(base, token)
        summary = h.finish(first, timeout=120)[-1]
    finally:
        h.kill_group(first)
    assert summary["status"] == "stopped" and summary["savepoint"] == first_stop["path"], summary
    assert 0 < len(h.published(out_url)) < TOTAL, "stopped midway, with some output committed"

    # 2. resume that savepoint by its path; stop again with a savepoint once it made progress
    second = h.spawn(
        _run_command(
            store_url,
            out_url,
            "--control-port",
            "0",
            "--restore-from",
            first_stop["path"],
            rate=300,
        ),
        tmp_path,
        env,
    )
    try:
        base = _control_url(second)
        status, raw = h.http("GET", f"{base}/v1/job", token)
        job = contract.parse_job(raw)
        assert status == 200 and job["restored_from"] == first_stop["id"], job
        assert _trigger(base, token, "checkpoint")["id"] > first_stop["id"]
        second_stop = _stop_with_savepoint(base, token)
        summary = h.finish(second, timeout=120)[-1]
    finally:
        h.kill_group(second)
    assert summary["restored_from"] == [first_stop["id"]], summary
    assert summary["status"] == "stopped" and second_stop["id"] > first_stop["id"], summary
    assert len(h.published(out_url)) < TOTAL

    # 3. resume the second savepoint by its id and run to the end
    third = h.spawn(
        _run_command(store_url, out_url, "--restore-from", str(second_stop["id"]), rate=None),
        tmp_path,
    )
    try:
        summary = h.finish(third, timeout=300)[-1]
    finally:
        h.kill_group(third)
    print(f"stopped at {first_stop['id']} and {second_stop['id']}; last run: {summary}")
    assert summary["status"] == "finished" and summary["restored_from"] == [second_stop["id"]]
    h.assert_exactly_once(crash_free, out_url)


def test_cjob_run_names_a_control_port_in_use(tmp_path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = [
            *h.CLI,
            "run",
            "-p",
            str(P),
            "--store",
            str(tmp_path / "cp"),
            "--control-port",
            str(port),
            PIPELINE,
            "--",
            *h.generator_args(str(tmp_path / "out")),
        ]
        run = subprocess.run(
            command, capture_output=True, text=True, timeout=240, cwd=tmp_path, check=False
        )
    assert run.returncode == 75, run.stderr[-2000:]  # EX_TEMPFAIL: the port may free up
    assert run.stderr.strip().splitlines()[-2] == (
        f"cjob: error: cannot serve the control API on 127.0.0.1:{port}: Address already in use; "
        "choose another port (0 picks a free one)"
    )


def test_driver_command_serves_the_control_api_and_stops_with_a_savepoint(
    spark, s3_env, crash_free, tmp_path
) -> None:
    """``cjob driver`` as the operator runs it; a later run resumes from the savepoint."""
    run = uuid.uuid4().hex[:8]
    out_url = s3_env.url(h.BUCKET, f"{run}/out")
    port, token = h.free_port(), uuid.uuid4().hex
    job = {
        "formatVersion": 1,
        "job": {"namespace": "default", "name": "ctl", "uid": "u1"},
        "pipeline": {"file": PIPELINE, "args": h.generator_args(out_url, rate=400)},
        "parallelism": P,
        "maxParallelism": 128,
        "checkpointing": {"timeoutSeconds": 60, "mode": "ExactlyOnce", "triggeredBy": "operator"},
        "storage": {
            "endpoint": s3_env.endpoint,
            "bucket": h.BUCKET,
            "root": f"{run}/default/ctl",
            "accessKeyEnv": "AWS_ACCESS_KEY_ID",
            "secretKeyEnv": "AWS_SECRET_ACCESS_KEY",
        },
        "restartPolicy": {
            "maxRestarts": 3,
            "windowSeconds": 600,
            "backoff": {"initialSeconds": 0.2, "maxSeconds": 1},
        },
        "control": {"port": port, "tokenEnv": "CJOB_CONTROL_TOKEN"},
        "sparkConf": {"spark.master": "k8s://https://kubernetes.default.svc"},
    }
    config_file = tmp_path / "job.json"
    config_file.write_text(json.dumps(job))
    env = {**os.environ, "CJOB_CONTROL_TOKEN": token, "CJOB_SPARK_MASTER": f"local[{P}]"}
    proc = subprocess.Popen(
        [*h.CLI, "driver", "--config", str(config_file)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        waiting.wait_until(
            lambda: h.http("GET", f"{base}/readyz")[0] == 200,
            180,
            "the driver to be ready",
            ignoring=(OSError,),
            interval=0.2,
        )
        assert h.http("POST", f"{base}/v1/checkpoints", body={"kind": "checkpoint"})[0] == 401
        status, body = h.http("POST", f"{base}/v1/checkpoints", token, {"kind": "checkpoint"})
        assert status == 202, body
        first = body["id"]
        waiting.wait_until(
            lambda: (
                h.http("GET", f"{base}/v1/checkpoints/{first}", token)[1]["status"] == "completed"
            ),
            60,
            "the triggered checkpoint",
            ignoring=(OSError,),
            interval=0.2,
        )
        time.sleep(1.0)  # the driver itself must not trigger periodic checkpoints
        _, listing = h.http("GET", f"{base}/v1/checkpoints", token)
        assert listing["counts"]["completed"] == 1, listing["counts"]
        status, stopped = h.http("POST", f"{base}/v1/stop", token, {"savepoint": True})
        assert status == 200, stopped
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        h.kill_group(proc)
    savepoint = stopped["path"]
    assert "/savepoints/sp-" in savepoint and stopped["id"] > first
    assert len(h.published(out_url)) < TOTAL

    spec = driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(PIPELINE, h.generator_args(out_url)),
        parallelism=P,
        store=config.StoreRef(s3_env.url(h.BUCKET, ""), f"{run}/default/ctl"),
        checkpoint=CheckpointConfig(interval=0.3),
        restore_from=savepoint,
    )
    result = driver.SparkDriver(spec, session=spark).run()
    assert result.restored_from[0] == stopped["id"]
    h.assert_exactly_once(crash_free, out_url)
