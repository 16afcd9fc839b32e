"""Child processes of the benchmark (producer, consumer, Spark peer) that answer in JSON lines.

A child prints JSON objects, one a line, on stdout (other lines, e.g. a JVM's chatter, are
skipped); its stderr goes to a log file whose tail is quoted when it fails. Every child is
stopped (terminated, then killed) on :meth:`Child.close`, so none outlives a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

import cjob_bench

BENCH_DIR = pathlib.Path(cjob_bench.__file__).resolve().parent.parent


class ChildFailedError(RuntimeError):
    """A child process ended or went silent before it answered."""


class Child:
    """``python -m MODULE ARGS`` with JSON answers on stdout and stderr in ``log``."""

    def __init__(self, module: str, args: Sequence[str], log: pathlib.Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(BENCH_DIR), *filter(None, [env.get("PYTHONPATH")])]
        )
        self.name = module.rsplit(".", 1)[-1]
        self.log = log
        self._err = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=env,
            start_new_session=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()

    def _pump(self, stream: IO[bytes] | None) -> None:
        if stream is not None:
            for raw in stream:
                self._lines.put(raw.decode(errors="replace"))
        self._lines.put(None)

    def answer(self, timeout: float) -> dict[str, Any]:
        """The next JSON object the child prints, within ``timeout`` seconds."""
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise ChildFailedError(
                    f"{self.name} said nothing within {timeout:g}s; log tail: {self.tail()}"
                ) from None
            if line is None:
                self.proc.wait(10)
                raise ChildFailedError(
                    f"{self.name} exited ({self.proc.returncode}) before answering; "
                    f"log tail: {self.tail()}"
                )
            line = line.strip()
            if line.startswith("{"):
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value

    def tell(self, line: str) -> None:
        """Write a line to the child's stdin (the Spark peer stops on it)."""
        if self.proc.stdin is not None:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()

    def tail(self, limit: int = 1500) -> str:
        self._err.flush()
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-limit:]

    def close(self, timeout: float = 30.0) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait()
        self._signal_group(signal.SIGKILL)  # what the child started (a JVM) goes with it
        self._err.close()

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)
