"""The whole user path on the local Kubernetes, with crashes, checked for exactly-once.

The steps are in :mod:`scenario`; this test runs them with P = 3 executor pods, two
executor container kills and one driver container kill, then reads the job's output
back from S3 and counts lost, duplicated and out-of-order records against the
crash-free output. It prints one line ``E2E_K8S_SUMMARY {json}`` (also written to
``build/e2e_k8s/summary.json``).
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import pytest
from cluster import DockerKiller
from k8s_job import Settings, check_output, summary_line
from scenario import Scenario

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _say(line: str) -> None:
    print(f"[e2e-k8s {time.strftime('%H:%M:%S')}] {line}", file=sys.__stderr__, flush=True)


@pytest.mark.timeout(1200)
def test_the_user_path_survives_executor_and_driver_crashes_exactly_once(
    cluster, images, s3_server, host_s3_endpoint, monkeypatch, capsys
) -> None:
    settings = Settings(runtime_image=images["runtime"], operator_image=images["operator"])
    s3_server.create_bucket(settings.bucket)
    repository, tag = images["operator"].split(":")
    started = time.monotonic()
    summary = Scenario(cluster, DockerKiller(), settings, log=_say).run(
        {
            "image.repository": repository,
            "image.tag": tag,
            "image.pullPolicy": "Never",
            "operator.reconcileInterval": "1",
        }
    )
    summary["seconds"] = round(time.monotonic() - started, 1)

    # The checker: the sink's committed output against the crash-free output.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    summary |= check_output(settings, host_s3_endpoint)
    line = summary_line(summary)
    with capsys.disabled():  # on the terminal (and in CI's log), not in a capture
        print(f"\n{line}", flush=True)
    out = ROOT / "build" / "e2e_k8s"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))

    assert summary["executor_pods_created"] >= settings.parallelism + settings.executor_kills
    assert summary["executor_kills"] >= 2 and summary["driver_kills"] >= 1
    assert summary["operator_restarts"] >= 1
    assert summary["checkpoints_completed"] >= 3
    assert (summary["lost"], summary["duplicated"], summary["out_of_order"]) == (0, 0, 0), summary
    assert summary["left_after_uninstall"] == [], summary
