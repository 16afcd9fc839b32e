"""EmbeddedS3Server: a real SeaweedFS that starts on free ports and leaves nothing behind."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterable

import pytest
import waiting
from barrier_runtime_testing.processes import alive

from barrier_runtime.storage import embedded, errors, object_store

pytestmark = pytest.mark.s3


def sockets_of(ports: Iterable[int], since: float) -> list[pathlib.Path]:
    """Unix sockets weed made at its fixed /tmp paths for ``ports`` at or after ``since``.

    A weed killed with SIGKILL elsewhere (another session's test, a crashed run)
    leaves its socket behind, and a later server may get the same port: only a
    socket made since this server started is this server's.
    """
    found = []
    for port in ports:
        for path in pathlib.Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
            info = path.lstat()
            if stat.S_ISSOCK(info.st_mode) and info.st_mtime >= since:
                found.append(path)
    return found


def test_second_server_runs_beside_the_session_one_and_cleans_up(
    s3_server: embedded.EmbeddedS3Server,
) -> None:
    started = time.time() - 1.0  # file times are coarser than the clock
    with embedded.EmbeddedS3Server(access_key="other", secret_key="other-secret") as server:
        running_inside = server.running
        assert server.endpoint != s3_server.endpoint
        store = object_store.open_object_store(
            server.url("bucket-a", "p"), access_key="other", secret_key="other-secret"
        )
        store.put("k", b"v")
        assert store.get("k") == b"v"
        pid, ports = server.pid, server.ports
        assert pid is not None and len(set(ports.values())) == 10
        assert sockets_of(
            ports.values(), started
        )  # weed made some: the check below means something
        runtime_dir = pathlib.Path("/proc", str(pid), "cwd").resolve()
    assert running_inside and not server.running
    assert not alive(pid)
    assert runtime_dir.name.startswith("cjob-weed-") and not runtime_dir.exists()
    assert sockets_of(ports.values(), started) == []
    with pytest.raises(errors.EmbeddedServerError, match="not running"):
        _ = server.endpoint


def test_server_is_stopped_when_the_block_fails() -> None:
    server = embedded.EmbeddedS3Server()
    with pytest.raises(RuntimeError, match="boom"), server:
        pid = server.pid
        raise RuntimeError("boom")
    assert pid is not None and not alive(pid)
    server.stop()  # idempotent


def test_a_server_that_cannot_start_fails_clearly(tmp_path: pathlib.Path) -> None:
    fake = tmp_path / "weed"
    fake.write_text("#!/bin/sh\necho 'weed: cannot start' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(errors.EmbeddedServerError, match=r"exited with status 3.*cannot start"):
        embedded.EmbeddedS3Server(weed_binary=fake, startup_timeout=5).start()


def test_weed_binary_is_found_next_to_the_interpreter() -> None:
    found = embedded.find_weed_binary()
    assert found.name == "weed" and os.access(found, os.X_OK)


def test_persistent_data_dir_survives_a_restart(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "s3-data"
    with embedded.EmbeddedS3Server(data_dir=data, secret_key="s") as server:
        server.open_store("keep").put("k", b"kept")
    with embedded.EmbeddedS3Server(data_dir=data, secret_key="s") as server:
        assert server.open_store("keep").get("k") == b"kept"


def test_server_dies_with_a_killed_parent() -> None:
    started = time.time() - 1.0
    script = (
        "import json, os, signal\n"
        "from barrier_runtime.storage import embedded\n"
        "server = embedded.EmbeddedS3Server().start()\n"
        "facts = [server.pid, str(server.runtime_dir), list(server.ports.values())]\n"
        "print(json.dumps(facts), flush=True)  # SIGKILL leaves no chance to flush later\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as users run it
    parent = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    pid, runtime_dir, ports = json.loads(parent.stdout)
    try:
        waiting.wait_until(lambda: not alive(pid), 10, f"the orphaned server {pid} to exit")
    finally:  # nobody was left to tidy up after the killed parent: do it here
        shutil.rmtree(runtime_dir, ignore_errors=True)
        for path in sockets_of(ports, started):
            path.unlink()
