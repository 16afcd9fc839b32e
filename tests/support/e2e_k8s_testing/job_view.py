"""What the scenario reads of its job while it runs: status, pods, waits that explain."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import waiting

from e2e_k8s_testing.cluster import Cluster, ContainerKiller, Obj
from e2e_k8s_testing.k8s_job import JOB_LABEL, ROLE, Settings


class JobView:
    def __init__(
        self,
        cluster: Cluster,
        killer: ContainerKiller | None,
        s: Settings,
        log: Callable[[str], None] = print,
    ) -> None:
        self.cluster, self.killer, self.s, self.log = cluster, killer, s, log
        self.summary: dict[str, Any] = {}

    # -- reads -------------------------------------------------------------------------

    def status(self) -> Obj:
        job = self.cluster.cjob(self.s.namespace, self.s.job)
        return dict((job or {}).get("status") or {})

    def last_completed(self) -> int:
        completed = (self.status().get("checkpoints") or {}).get("lastCompleted") or {}
        value = completed.get("id")
        return value if isinstance(value, int) else -1

    def job_pods(self, role: str) -> list[Obj]:
        selector = f"{JOB_LABEL}={self.s.job},{ROLE}={role}"
        return self.cluster.pods(self.s.namespace, selector)

    def running(self, role: str) -> list[Obj]:
        return [
            p
            for p in self.job_pods(role)
            if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        ]

    def seen(self) -> str:
        st = self.status()
        pods = {
            p["metadata"]["name"]: (p.get("status") or {}).get("phase")
            for p in self.cluster.pods(self.s.namespace)
        }
        return (
            f"phase={st.get('phase')} error={st.get('error')!r} "
            f"lastCompleted={self.last_completed()} pods={pods}"
        )

    def wait(self, what: str, check: Callable[[], Any], timeout: float | None = None) -> Any:
        started = time.monotonic()
        value = waiting.wait_until(
            check, timeout or self.s.step_timeout, what, interval=1.0, explain=self.seen
        )
        self.log(f"  ok: {what} ({time.monotonic() - started:.0f}s)")
        return value

    def checkpoints_after(self, checkpoint: int) -> Callable[[], bool]:
        return lambda: self.last_completed() > checkpoint

    def _set_state(self, state: str) -> None:
        patch = json.dumps({"spec": {"state": state}})
        self.cluster.kubectl_run(
            "-n", self.s.namespace, "patch", "cjob", self.s.job, "--type", "merge", "-p", patch
        )

    @staticmethod
    def last_completed_of(status: Mapping[str, Any]) -> int:
        completed = (status.get("checkpoints") or {}).get("lastCompleted") or {}
        value = completed.get("id")
        return value if isinstance(value, int) else -1
