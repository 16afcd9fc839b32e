"""The container engine as the kubelet uses it: the ``docker`` command line, asynchronously.

Every container the kubelet starts carries the label ``kube-local.state=<id>`` (the
state directory's identity), so one call finds and removes all of them, including
what an earlier server left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import subprocess
from collections.abc import Sequence
from typing import Any

LABEL = "kube-local.state"


class EngineError(Exception):
    """A docker command failed; the message is docker's."""


@dataclasses.dataclass(frozen=True, slots=True)
class Exit:
    code: int
    oom_killed: bool
    started_at: str
    finished_at: str


class Engine:
    def __init__(self, docker: str, state_id: str) -> None:
        self.docker = docker
        self.state_id = state_id

    async def _run(self, *args: str, timeout: float = 120.0) -> str:
        process = await asyncio.create_subprocess_exec(
            self.docker, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            raise EngineError(f"docker {args[0]} timed out after {timeout:.0f}s") from None
        if process.returncode != 0:
            raise EngineError(err.decode(errors="replace").strip() or f"docker {args[0]} failed")
        return out.decode(errors="replace")

    async def image_user(self, image: str) -> str | None:
        """The image's ``User`` ("" for root), or ``None`` when the engine lacks the image;
        :class:`EngineError` when the engine does not answer."""
        try:
            return (await self._run("image", "inspect", "-f", "{{.Config.User}}", image)).strip()
        except EngineError as exc:
            if "no such image" in str(exc).lower():
                return None
            raise

    async def run(
        self,
        name: str,
        image: str,
        options: Sequence[str],
        args: Sequence[str],
        labels: dict[str, str],
    ) -> str:
        label_args = [f"--label={k}={v}" for k, v in {LABEL: self.state_id, **labels}.items()]
        out = await self._run(
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            *label_args,
            *options,
            image,
            *args,
        )
        return out.strip()

    async def wait(self, container: str) -> Exit:
        await self._run("wait", container, timeout=10.0**7)
        state = await self.inspect(container)
        return Exit(
            int(state.get("ExitCode", -1)),
            bool(state.get("OOMKilled")),
            str(state.get("StartedAt", "")),
            str(state.get("FinishedAt", "")),
        )

    async def inspect(self, container: str) -> dict[str, Any]:
        raw = await self._run("inspect", "-f", "{{json .State}}", container)
        state: dict[str, Any] = json.loads(raw)
        return state

    async def stop(self, container: str, grace: int) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (0: SIGKILL at once)."""
        try:
            if grace <= 0:
                await self._run("kill", container)
            else:
                await self._run("stop", "--time", str(grace), container, timeout=grace + 60.0)
        except EngineError:
            pass  # already gone

    async def remove(self, container: str) -> None:
        with contextlib.suppress(EngineError):
            await self._run("rm", "--force", container)

    async def logs(self, container: str, tail: int | None = None) -> str:
        args = ["logs"] + (["--tail", str(tail)] if tail is not None else []) + [container]
        process = await asyncio.create_subprocess_exec(
            self.docker, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await process.communicate()
        return out.decode(errors="replace")

    async def exec_ok(self, container: str, command: Sequence[str], timeout: float) -> bool:
        try:
            await self._run("exec", container, *command, timeout=timeout)
        except EngineError:
            return False
        return True

    def remove_all_now(self) -> int:
        """Remove every container of this state directory (blocking: start-up and stop)."""
        listed = subprocess.run(
            [self.docker, "ps", "--all", "--quiet", "--filter", f"label={LABEL}={self.state_id}"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        ids = listed.stdout.split()
        if ids:
            subprocess.run(
                [self.docker, "rm", "--force", *ids], capture_output=True, check=False, timeout=120
            )
        return len(ids)
