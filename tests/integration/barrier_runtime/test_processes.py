"""processes.ServerProcess: the one launcher every server the runtime starts goes through.

Real child processes (small Python programs), no doubles: each test checks what a
server launched this way leaves behind (nothing) and what it reports.
"""

from __future__ import annotations

import gc
import os
import pathlib
import socket
import sys

import pytest
import waiting
from barrier_runtime_testing.processes import alive

from barrier_runtime import processes

# Writes its pid and its child's pid, says "up", then waits; on SIGTERM says "terminated".
SERVER = """
import os, signal, subprocess, sys, time
def bye(signum, frame):
    print("terminated", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open("pids", "w").write(f"{os.getpid()} {child.pid}")
print("up", flush=True)
time.sleep(600)
"""


def start(server: processes.ServerProcess) -> tuple[int, int]:
    """Spawn :data:`SERVER`, wait until it is up; its pid and its child's."""
    pids = server.runtime_dir / "pids"
    pids.unlink(missing_ok=True)
    ups = server.log_tail().count("up")
    server.spawn([sys.executable, "-c", SERVER])
    assert server.wait_ready(lambda: server.log_tail().count("up") > ups, 30) is None
    parent, child = map(int, pids.read_text().split())
    return parent, child


def test_stop_ends_the_whole_process_group_and_removes_the_directory() -> None:
    server = processes.ServerProcess("cjob-test-proc-")
    parent, child = start(server)
    runtime_dir = server.runtime_dir
    assert runtime_dir.name.startswith("cjob-test-proc-")
    assert os.getpgid(parent) == parent  # a session of its own: a kill reaches its children
    server.stop()
    waiting.wait_until(lambda: not alive(parent) and not alive(child), 10, "both to end")
    assert not runtime_dir.exists() and server.process is None
    server.stop()  # idempotent


def test_kill_keeps_the_directory_and_a_new_run_appends_to_the_log() -> None:
    server = processes.ServerProcess("cjob-test-proc-")
    try:
        first, _ = start(server)
        server.kill()
        assert not alive(first) and server.runtime_dir.is_dir()
        start(server)
        assert server.log_tail().count("up") == 2
        server.spawn([sys.executable, "-c", "print('fresh')"], new_log=True)
        waiting.wait_until(lambda: "fresh" in server.log_tail(), 10, "the new output")
        assert "up" not in server.log_tail()
    finally:
        server.stop()


def test_wait_ready_says_why_a_server_did_not_come_up() -> None:
    server = processes.ServerProcess("cjob-test-proc-", log_name="odd.log")
    try:
        server.spawn([sys.executable, "-c", "import sys; print('no luck'); sys.exit(3)"])
        assert server.wait_ready(lambda: False, 30) == "it exited with status 3"
        assert "no luck" in server.log_tail() and server.log_path.name == "odd.log"
        server.spawn([sys.executable, "-c", "import time; time.sleep(600)"])
        assert server.wait_ready(lambda: False, 0.2) == "it was not ready within 0.2s"
    finally:
        server.stop()


@pytest.mark.parametrize("graceful", [True, False])
def test_a_graceful_server_gets_sigterm_first(graceful: bool) -> None:
    server = processes.ServerProcess("cjob-test-proc-", graceful=graceful)
    try:
        start(server)
        server.kill()
        assert ("terminated" in server.log_tail()) is graceful
    finally:
        server.stop()


def test_stray_unix_sockets_are_removed_and_nothing_else(tmp_path: pathlib.Path) -> None:
    sock_path, plain = tmp_path / "stray.sock", tmp_path / "plain"
    server = processes.ServerProcess("cjob-test-proc-")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
    plain.write_text("keep me")
    server.stray_files = [sock_path, plain, tmp_path / "never-made.sock"]
    start(server)
    server.stop()
    assert not sock_path.exists() and plain.read_text() == "keep me"


def test_a_forgotten_server_is_stopped_when_collected() -> None:
    server = processes.ServerProcess("cjob-test-proc-")
    parent, child = start(server)
    runtime_dir = server.runtime_dir
    del server
    gc.collect()
    waiting.wait_until(lambda: not alive(parent) and not alive(child), 10, "both to end")
    assert not runtime_dir.exists()


def test_ports_and_binaries(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    ports = processes.free_ports("127.0.0.1", 3)
    assert len(set(ports)) == 3 and not processes.port_open("127.0.0.1", ports[0])
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", processes.free_port()))
        listener.listen()
        assert processes.port_open(*listener.getsockname())
    tool = tmp_path / "cjob-test-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert processes.find_binary("cjob-test-tool", "CJOB_TEST_TOOL") is None
    monkeypatch.setenv("CJOB_TEST_TOOL", str(tool))
    assert processes.find_binary("cjob-test-tool", "CJOB_TEST_TOOL") == tool
    monkeypatch.setenv("CJOB_DROPPED", "x")
    env = processes.child_environment(["CJOB_DROPPED"], CJOB_SET="y")
    assert "CJOB_DROPPED" not in env and env["CJOB_SET"] == "y"
