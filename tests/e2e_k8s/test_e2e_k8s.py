"""The whole user path on Kubernetes, with crashes, checked for exactly-once.

The steps are in :mod:`scenario`; this test runs them with P = 3 executor pods, two
executor container kills and one driver container kill, a suspend and resume and a
rolled-back spec change, then reads the job's output back from S3 and counts lost,
duplicated and out-of-order records against the crash-free output. It prints one line
``E2E_K8S_SUMMARY {json}`` (also written to ``build/e2e_k8s/summary.json``) that says
which API server (``/version``), which kind of node and which S3 server ran it (on the
local target MinIO of the release ``scripts/minio-build.sh`` builds, in namespace
``minio``: its ``Server`` header and the release its admin info API reports).

It runs on the local control plane by default and on the cluster of the current
kubeconfig with ``CJOB_E2E_TARGET=current-context`` (see conftest.py).
"""

from __future__ import annotations

import json
import pathlib
import time

import pytest
from e2e_k8s_testing import object_store
from e2e_k8s_testing.cluster import AnyKiller
from e2e_k8s_testing.installed import chart_values
from e2e_k8s_testing.k8s_job import Settings, check_output, say, summary_line
from e2e_k8s_testing.scenario import Scenario

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1800)
def test_the_user_path_survives_executor_and_driver_crashes_exactly_once(
    cluster,
    images,
    s3_server,
    s3_identity,
    host_s3_endpoint,
    target,
    kubeconfig,
    monkeypatch,
    capsys,
) -> None:
    settings = Settings(
        runtime_image=images["runtime"],
        operator_image=images["operator"],
        image_pull_policy=images["pull_policy"],
        storage_endpoint=s3_server.cluster_endpoint,
        step_timeout=180.0 if target == "local" else 300.0,
    )
    s3_server.create_bucket(settings.bucket)
    started = time.monotonic()
    # on the local node, containerd kills the container (exit 137, as an OOM kill would)
    local_node = kubeconfig.parent / "node" / "containerd.sock"
    killer = AnyKiller(local_node if target == "local" else None)
    summary = Scenario(cluster, killer, settings, log=say).run(
        chart_values(images, **{"operator.reconcileInterval": "1"})
    )
    summary["seconds"] = round(time.monotonic() - started, 1)
    summary["target"] = target
    summary["s3_server"] = s3_identity.describe()

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

    assert summary["control_plane"].startswith("kube-apiserver v1."), summary
    assert summary["kubelet"] in ("real", "node-agent"), summary
    if target == "local":  # the local cluster's object store: the MinIO pod built here
        release = object_store.image_release(images["minio"])
        assert summary["s3_server"] == f"MinIO {release}", summary
    assert summary["executor_pods_created"] >= settings.parallelism + settings.executor_kills
    assert summary["executor_kills"] >= 2 and summary["driver_kills"] >= 1
    assert summary["operator_restarts"] >= 1
    assert summary["checkpoints_completed"] >= 3
    assert summary["rolled_back_from"].endswith(":never-built"), summary
    assert (summary["lost"], summary["duplicated"], summary["out_of_order"]) == (0, 0, 0), summary
    assert summary["left_after_uninstall"] == [], summary
