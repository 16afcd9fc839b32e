"""MinioServer, the storage tests' second server: the pinned release, on free ports, and
nothing left behind (process, temporary directory, ``~/.minio``); where MinIO is not built
its tests skip saying what to run, and fail instead in CI (``CJOB_REQUIRE_DOCKER=1``)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest
import waiting
from barrier_runtime_testing import minio_server as minio_mod
from barrier_runtime_testing.processes import alive

from barrier_runtime.storage import errors, object_store

pytestmark = [pytest.mark.s3, pytest.mark.minio]
ROOT = pathlib.Path(__file__).resolve().parents[4]


def test_the_session_server_is_the_pinned_release(
    minio_server: minio_mod.MinioServer,
) -> None:
    assert minio_server.version == minio_mod.pinned_release() == "RELEASE.2026-02-12T20-18-48Z"
    assert set(minio_server.ports) == {"api", "console"}
    assert minio_server.endpoint == f"http://127.0.0.1:{minio_server.ports['api']}"


def test_a_second_server_runs_beside_the_session_one_and_leaves_nothing(
    minio_server: minio_mod.MinioServer,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binary = minio_mod.minio_binary()  # before HOME moves (the build cache is under it)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # MinIO's default config directory is ~/.minio
    with minio_mod.MinioServer(
        access_key="other", secret_key="other-secret", binary=binary
    ) as server:
        running_inside = server.running
        assert server.endpoint != minio_server.endpoint
        store = object_store.open_object_store(
            server.url("bucket-a", "p"), access_key="other", secret_key="other-secret"
        )
        store.put("k", b"v")
        assert store.get("k") == b"v"
        pid, runtime_dir = server.pid, server.runtime_dir
        assert pid is not None and runtime_dir is not None
        assert pathlib.Path("/proc", str(pid), "cwd").resolve() == runtime_dir.resolve()
    assert running_inside and not server.running and not alive(pid)
    assert runtime_dir.name.startswith("cjob-minio-") and not runtime_dir.exists()
    assert list(home.iterdir()) == []
    with pytest.raises(errors.EmbeddedServerError, match="MinIO server is not running"):
        _ = server.endpoint


def test_a_server_that_cannot_start_fails_clearly(tmp_path: pathlib.Path) -> None:
    fake = tmp_path / "minio"
    fake.write_text("#!/bin/sh\necho 'minio: cannot start' >&2\nexit 3\n")
    fake.chmod(0o755)
    server = minio_mod.MinioServer(binary=fake, startup_timeout=5)
    with pytest.raises(errors.EmbeddedServerError, match=r"exited with status 3.*cannot start"):
        server.start()
    assert server.runtime_dir is None and not list(tmp_path.glob("cjob-minio-*"))


def test_the_binary_comes_from_the_environment_or_the_build_cache(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(minio_mod.BINARY_ENV, str(tmp_path / "none"))
    with pytest.raises(minio_mod.MinioNotBuiltError, match="none is not an executable file"):
        minio_mod.minio_binary()
    monkeypatch.delenv(minio_mod.BINARY_ENV)
    monkeypatch.setenv("CJOB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(minio_mod.MinioNotBuiltError) as missing:
        minio_mod.minio_binary()
    assert str(missing.value) == (
        "MinIO RELEASE.2026-02-12T20-18-48Z is not built on this machine: run "
        f"scripts/minio-build.sh (it builds it once into {tmp_path / 'cache' / 'minio'}), "
        f"or set {minio_mod.BINARY_ENV}"
    )
    built = tmp_path / "cache/minio" / f"{minio_mod.pinned_module_version()}-abc/bin/minio"
    built.parent.mkdir(parents=True)
    built.write_text("#!/bin/sh\n")
    built.chmod(0o755)
    assert minio_mod.minio_binary() == built


def test_server_dies_with_a_killed_parent() -> None:
    script = (
        "import json, os, signal\n"
        "from barrier_runtime_testing import minio_server\n"
        "server = minio_server.MinioServer().start()\n"
        "print(json.dumps([server.pid, str(server.runtime_dir)]), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests" / "support")}
    parent = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        check=False, env=env,
    )  # fmt: skip
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    pid, runtime_dir = json.loads(parent.stdout)
    try:
        waiting.wait_until(lambda: not alive(pid), 10, f"the orphaned server {pid} to exit")
    finally:  # nobody was left to tidy up after the killed parent: do it here
        shutil.rmtree(runtime_dir, ignore_errors=True)


@pytest.mark.parametrize("required", [False, True], ids=["skips", "fails-in-ci"])
def test_without_minio_the_tests_skip_or_in_ci_fail(tmp_path: pathlib.Path, required: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != minio_mod.BINARY_ENV}
    env.update(CJOB_CACHE=str(tmp_path), CJOB_REQUIRE_DOCKER="1" if required else "0")
    run = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs",
            f"{pathlib.Path(__file__).parent / 'test_storage_s3_errors.py'}",
            "-k", "conditional_writer and minio",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ("1 error" if required else "1 skipped") in run.stdout, run.stdout
    assert run.returncode == (1 if required else 0), run.stdout
    assert "not built on this machine: run scripts/minio-build.sh" in run.stdout
