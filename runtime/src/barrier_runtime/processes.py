"""Helpers for the real servers the runtime starts as child processes (S3, brokers)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def find_binary(name: str, env_var: str) -> pathlib.Path | None:
    """``$env_var``, else ``name`` next to the interpreter or in its scripts dir, else ``PATH``."""
    candidates: list[pathlib.Path] = []
    if override := os.environ.get(env_var):
        candidates.append(pathlib.Path(override))
    candidates.append(pathlib.Path(sys.executable).parent / name)
    candidates.append(pathlib.Path(sysconfig.get_path("scripts")) / name)
    if found := shutil.which(name):
        candidates.append(pathlib.Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGKILL the child when its parent dies."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arrange() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return arrange


def signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    """Send ``signum`` to ``process``'s process group (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports that are free on ``host`` right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()
