"""The whole user path on Kubernetes, step by step (issues 10 and 28).

1. ``helm install`` the chart (the operator runs as a container of the operator image,
   with the chart's RBAC; the driver ServiceAccount and Role in the job namespace);
2. ``kubectl apply`` a CheckpointedJob: the operator creates the driver pod, Spark's
   Kubernetes backend creates P executor pods, the barrier stage runs on them with
   periodic checkpoints and an exactly-once file sink in S3;
3. SIGKILL executor containers, one at a time: Spark replaces the executor and the
   driver restarts the stage from the latest completed checkpoint (checkpoints move on);
4. SIGKILL the driver container: the operator restarts the driver pod from the latest
   completed checkpoint (checkpoints move on);
5. ``kubectl get cjob`` shows the job Running with its checkpoint age;
6. suspend: a final savepoint, then no driver and no executor pods;
7. resume: the new driver restores that savepoint;
8. rollback: a spec change whose driver never runs (an image no node has) is rolled
   back to the last stable spec after ``spec.rollback.timeout``, from the latest
   checkpoint (checkpoints move on);
9. the bounded source ends, the job finishes (phase Finished);
10. the checker reads the sink and compares with the crash-free output;
11. delete the job, ``helm uninstall``: nothing of ours is left (:mod:`leftovers` lists
    every object type the API server serves).

The same steps run on every target (tests/e2e_k8s/conftest.py): the local control plane
or the cluster of the current kubeconfig; the summary says which API server and which
kind of node ran them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from e2e_k8s_testing import job_view, leftovers
from e2e_k8s_testing.cluster import ContainerKiller, ScenarioError
from e2e_k8s_testing.k8s_job import Recorder, job_manifest

NEVER_BUILT_TAG = "never-built"
"""The tag of the rollback step's broken image: no node has it, none pulls it."""


class Scenario(job_view.JobView):
    # -- steps -------------------------------------------------------------------------

    def install(self, values: Mapping[str, str]) -> None:
        self.log("helm install the chart (cluster-wide, driver account in the job namespace)")
        args = [
            "install",
            self.s.release,
            self.s.chart,
            "--namespace",
            self.s.operator_namespace,
            "--set",
            f"driver.namespaces={{{self.s.namespace}}}",
        ]
        for key, value in values.items():
            args += ["--set", f"{key}={value}"]
        self.cluster.helm_run(*args)
        self.wait(
            "the operator pod Running",
            lambda: [
                p
                for p in self.cluster.pods(self.s.operator_namespace)
                if (p.get("status") or {}).get("phase") == "Running"
            ],
        )

    def submit(self) -> None:
        self.log(f"kubectl apply the CheckpointedJob (P={self.s.parallelism})")
        manifest = yaml.safe_dump(job_manifest(self.s))
        self.cluster.kubectl_run("apply", "-f", "-", stdin=manifest)
        self.wait(
            f"{self.s.parallelism} executor pods Running",
            lambda: len(self.running("executor")) >= self.s.parallelism,
            300,
        )
        self.wait(
            "phase Running and a completed checkpoint",
            lambda: self.status().get("phase") == "Running" and self.last_completed() >= 0,
        )

    def kill_executors(self) -> int:
        for n in range(self.s.executor_kills):
            before = self.last_completed()
            victim = self.running("executor")[0]
            self.log(
                f"SIGKILL executor container {victim['metadata']['name']} "
                f"(#{n + 1}, last checkpoint {before})"
            )
            self._killer().kill(self.cluster, victim)
            self.wait("Spark replaced the executor", self._replaced(victim["metadata"]["uid"]))
            self.wait(
                f"a checkpoint after {before} (the stage restarted)", self.checkpoints_after(before)
            )
        return self.s.executor_kills

    def kill_driver(self) -> int:
        for n in range(self.s.driver_kills):
            before = self.last_completed()
            restarts = int((self.status().get("restarts") or {}).get("count") or 0)
            (driver,) = self.running("driver")
            self.log(f"SIGKILL the driver container (#{n + 1}, last checkpoint {before})")
            self._killer().kill(self.cluster, driver)
            self.wait(
                "the operator restarted the driver pod",
                self._driver_restarted(driver["metadata"]["uid"], restarts),
            )
            (new,) = self.running("driver")
            restore = new["metadata"].get("annotations", {}).get("checkpointed.dev/restore-from")
            if not restore:
                raise ScenarioError(
                    f"the new driver pod restores nothing: {new['metadata'].get('annotations')}"
                )
            self.log(f"  the new driver restores {restore}")
            self.wait(f"a checkpoint after {before}", self.checkpoints_after(before))
        return self.s.driver_kills

    def _killer(self) -> ContainerKiller:
        if self.killer is None:
            raise ScenarioError("this scenario was set up without a way to kill containers")
        return self.killer

    def _replaced(self, gone: str) -> Callable[[], bool]:
        def check() -> bool:
            running = self.running("executor")
            return (
                gone not in {p["metadata"]["uid"] for p in running}
                and len(running) >= self.s.parallelism
            )

        return check

    def _driver_restarted(self, old: str, restarts: int) -> Callable[[], bool]:
        def check() -> bool:
            count = int((self.status().get("restarts") or {}).get("count") or 0)
            return count > restarts and any(
                p["metadata"]["uid"] != old for p in self.running("driver")
            )

        return check

    def get_cjob(self) -> str:
        table = self.cluster.kubectl_run("-n", self.s.namespace, "get", "cjob", self.s.job)
        self.log(table.rstrip())
        header, row = table.splitlines()[:2]
        for column in ("PHASE", "LAST CHECKPOINT", "CHECKPOINT AGE", "RESTARTS"):
            if column not in header:
                raise ScenarioError(f"`kubectl get cjob` has no {column} column: {header}")
        start = header.index("CHECKPOINT AGE")
        checkpoint_age = row[start:].split()[0] if len(row) > start else ""
        if " Running " not in f" {row} " or not re.fullmatch(r"\d+[smhd]", checkpoint_age):
            raise ScenarioError(
                f"`kubectl get cjob` does not show Running with a checkpoint age: {row}"
            )
        return table

    def suspend_and_resume(self) -> str:
        self.log("suspend: final savepoint, then no pods")
        self._set_state("suspended")
        self.wait(
            "phase Suspended and no job pods",
            lambda: (
                self.status().get("phase") == "Suspended"
                and not self.job_pods("driver")
                and not self.job_pods("executor")
            ),
        )
        savepoint = ((self.status().get("checkpoints") or {}).get("lastSavepoint") or {}).get(
            "path"
        )
        if not savepoint:
            raise ScenarioError(f"suspended without a savepoint: {self.status()}")
        self.log(f"  savepoint {savepoint}; resume")
        self._set_state("running")
        driver = self.wait(
            "a driver pod restoring the savepoint",
            lambda: [
                p
                for p in self.job_pods("driver")
                if p["metadata"].get("annotations", {}).get("checkpointed.dev/restore-from")
            ],
        )
        restore = driver[0]["metadata"]["annotations"]["checkpointed.dev/restore-from"]
        if restore.rstrip("/").rsplit("/", 1)[-1] not in savepoint:
            raise ScenarioError(f"resumed from {restore}, not the savepoint {savepoint}")
        return str(savepoint)

    def rollback(self) -> str:
        """An image no node has, with ``spec.rollback`` on: the driver never runs, and after
        the timeout the operator redeploys the last stable spec from the latest checkpoint."""
        resumed = self.last_completed()
        self.wait(
            f"the resumed job running: a checkpoint after {resumed}",
            self.checkpoints_after(resumed),
        )
        self.wait(
            "the running spec recorded as stable",
            lambda: (self.status().get("rollout") or {}).get("state") == "Stable",
        )
        good = self.s.runtime_image
        bad = f"{good.rsplit(':', 1)[0]}:{NEVER_BUILT_TAG}"
        self.log(f"rollback: change the image to {bad} (spec.rollback.timeout 20s)")
        patch = {"spec": {"image": bad, "rollback": {"enabled": True, "timeout": "20s"}}}
        self.cluster.kubectl_run(
            "-n",
            self.s.namespace,
            "patch",
            "cjob",
            self.s.job,
            "--type",
            "merge",
            "-p",
            json.dumps(patch),
        )
        self.wait("a driver pod of the broken image", lambda: self._driver_image(bad))
        before = self.last_completed()
        self.wait(
            "status.rollout RolledBack",
            lambda: (self.status().get("rollout") or {}).get("state") == "RolledBack",
            120,
        )
        self.wait("the stable image running again", lambda: self._driver_image(good, running=True))
        (driver,) = self.running("driver")
        if not driver["metadata"].get("annotations", {}).get("checkpointed.dev/restore-from"):
            raise ScenarioError("the rolled-back driver restores no checkpoint")
        self.wait(f"a checkpoint after {before}", self.checkpoints_after(before))
        return bad

    def _driver_image(self, image: str, running: bool = False) -> bool:
        pods = self.running("driver") if running else self.job_pods("driver")
        return any(
            c.get("image") == image
            for p in pods
            for c in (p.get("spec") or {}).get("containers", [])
        )

    def finish(self) -> None:
        if self.status().get("phase") == "Finished":
            return
        self.wait(
            "phase Finished (the bounded source ended)",
            lambda: self.status().get("phase") == "Finished",
            600,
        )

    def uninstall(self) -> list[str]:
        self.log("delete the job, helm uninstall")
        self.cluster.kubectl_run(
            "-n", self.s.namespace, "delete", "cjob", self.s.job, "--timeout=120s"
        )
        self.cluster.helm_run(
            "uninstall", self.s.release, "--namespace", self.s.operator_namespace, "--wait"
        )
        self.wait(
            "no pods left",
            lambda: (
                not self.cluster.pods(self.s.namespace)
                and not self.cluster.pods(self.s.operator_namespace)
            ),
        )
        # The garbage collector removes what the release's objects owned (ReplicaSets,
        # EndpointSlices) after them: wait for an empty list, report what stays.
        deadline = time.monotonic() + 60
        while True:
            left = leftovers.left(
                self.cluster.kubectl_run,
                self.s.release,
                self.s.job,
                own_namespaces=(self.s.namespace, self.s.operator_namespace, "minio"),
            )
            if not left or time.monotonic() > deadline:
                return left
            self.log(f"  still there: {left}")
            time.sleep(2)

    def run(self, values: Mapping[str, str]) -> dict[str, Any]:
        left: list[str] | None = None
        try:
            with Recorder(self.cluster, self.s) as recorder:
                self.install(values)
                self.submit()
                executor_kills = self.kill_executors()
                driver_kills = self.kill_driver()
                self.wait(
                    "`kubectl get cjob` shows Running with a checkpoint age",
                    self._get_cjob_shows_running,
                    90,
                )
                self.suspend_and_resume()
                rolled_back = self.rollback()
                self.finish()
                recorder.sample()
                status = self.status()
                restarted_pods = self.operator_restarts()
            left = self.uninstall()
        finally:
            if left is None:  # a step failed: say what was going on, leave the cluster clean
                self.diagnostics()
                self.cleanup()
        self.summary = {
            "control_plane": self.cluster.control_plane(),
            "kubelet": self.cluster.kubelet(),
            "rolled_back_from": rolled_back,
            "executor_pods_created": len(recorder.executor_pods),
            "executor_kills": executor_kills,
            "driver_kills": driver_kills,
            "driver_pods_created": len(recorder.driver_uids),
            "operator_restarts": restarted_pods,
            "restarts_counted": int((status.get("restarts") or {}).get("count") or 0),
            "checkpoints_completed": len(recorder.completed_ids),
            "last_checkpoint": self.last_completed_of(status),
            "left_after_uninstall": left,
            "executor_pod_names": sorted(recorder.executor_pods),
        }
        return self.summary

    def operator_restarts(self) -> int:
        """Driver pods the operator replaced after a failure (its restart Events); the
        Restarts column also counts the restarts the driver made itself."""
        return sum(
            int(e.get("count") or 1)
            for e in self.cluster.events(self.s.namespace)
            if e.get("reason") in ("DriverFailed", "DriverDisappeared")
            and (e.get("involvedObject") or {}).get("name") == self.s.job
        )

    def _get_cjob_shows_running(self) -> bool:
        try:
            self.get_cjob()
        except ScenarioError as exc:
            self.log(f"  not yet: {exc}")
            return False
        return True

    def diagnostics(self) -> None:
        """The logs a person would read first: the driver's and the operator's."""
        for ns, target in (
            (self.s.namespace, f"pod/{self.s.job}-driver"),
            (self.s.operator_namespace, f"deployment/{self.s.release}-checkpointed-operator"),
        ):
            try:
                text = self.cluster.run("kubectl", "-n", ns, "logs", target, "--tail=60")
            except ScenarioError as exc:
                text = str(exc)
            self.log(f"---- logs of {ns}/{target} ----\n{text}")

    def cleanup(self) -> None:
        """Best effort after a failed step: the job (its finalizer runs), then the release."""
        for args in (
            ("kubectl", "-n", self.s.namespace, "delete", "cjob", "--all", "--timeout=90s"),
            (
                "helm",
                "uninstall",
                self.s.release,
                "--namespace",
                self.s.operator_namespace,
                "--wait",
            ),
        ):
            try:
                self.cluster.run(args[0], *args[1:])
            except ScenarioError as exc:
                self.log(f"  cleanup: {exc}")
