"""Test support for the Helm chart: find the tools, render values combinations, parse docs.

``helm`` comes from ``.venv/bin`` (installed by ``scripts/get-helm.sh``) or PATH;
``promtool`` from PATH (Debian package ``prometheus``). Both are installed by
``scripts/install-test-tools.sh``; tests that need a missing tool skip and say so.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "checkpointed-operator"
RULES_FILE = CHART / "files" / "prometheus-rules.yaml"
DASHBOARDS = CHART / "files" / "dashboards"
OPERATIONS_DOC = ROOT / "docs" / "operations.md"
PROMTOOL_TESTS = ROOT / "tests" / "unit" / "chart" / "promtool"
RELEASE = "cjob"
NAMESPACE = "cjob-system"

INSTALL_HINT = "run scripts/install-test-tools.sh"

# Values combinations every rendering test runs over (issue 5: defaults, monitoring on,
# NetworkPolicy on, namespaced mode; plus the evaluation MinIO and everything at once).
MONITORING = [
    "metrics.serviceMonitor.enabled=true",
    "metrics.podMonitor.enabled=true",
    "prometheusRule.enabled=true",
    "grafanaDashboard.enabled=true",
]
COMBOS: dict[str, list[str]] = {
    "defaults": [],
    "monitoring": MONITORING,
    "network-policy": ["networkPolicy.enabled=true"],
    "namespaced": ["watchNamespaces={team-a,team-b}"],
    "minio": ["minio.enabled=true"],
    "driver-pvcs": ["driver.rbac.persistentVolumeClaims=true", "driver.namespaces={jobs-1,jobs-2}"],
    "everything": [
        *MONITORING,
        "networkPolicy.enabled=true",
        "minio.enabled=true",
        "minio.persistence.enabled=true",
        "watchNamespaces={team-a,team-b}",
        "driver.rbac.persistentVolumeClaims=true",
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
    ],
    "no-discovery": ["rbac.clusterDiscovery=false", "watchNamespaces={team-a}"],
}

Manifest = dict[str, Any]


def helm_binary() -> str | None:
    local = Path(sys.executable).parent / "helm"
    if local.is_file():
        return str(local)
    venv = ROOT / ".venv" / "bin" / "helm"
    if venv.is_file():
        return str(venv)
    return shutil.which("helm")


def promtool_binary() -> str | None:
    return shutil.which("promtool")


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    binary = helm_binary()
    assert binary is not None
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, check=False)


@functools.cache
def _render_cached(sets: tuple[str, ...], include_crds: bool) -> str:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    if include_crds:
        args.append("--include-crds")
    for item in sets:
        args += ["--set", item]
    done = helm(*args)
    if done.returncode != 0:
        raise AssertionError(f"helm template {' '.join(sets)} failed:\n{done.stderr}")
    return done.stdout


def render(sets: list[str] | tuple[str, ...] = (), include_crds: bool = False) -> list[Manifest]:
    """The manifests ``helm template`` renders with these ``--set`` values."""
    text = _render_cached(tuple(sets), include_crds)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def render_error(sets: list[str]) -> str:
    """The error of a rendering expected to fail."""
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for item in sets:
        args += ["--set", item]
    done = helm(*args)
    assert done.returncode != 0, f"helm template {sets} should have failed"
    return done.stderr


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m.get("kind") == kind]


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [m for m in of_kind(manifests, kind) if name is None or m["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
    return found[0]


def pod_specs(manifests: list[Manifest]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(name, pod spec) of every workload's pod template."""
    for m in manifests:
        if m.get("kind") in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            yield m["metadata"]["name"], m["spec"]["template"]["spec"]


# -- docs/operations.md ------------------------------------------------------------------


def markdown_section(text: str, heading: str) -> str:
    """The body of ``## heading`` (up to the next heading of the same or higher level)."""
    level = None
    body: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^(#+)\s+(.*?)\s*$", line)
        if level is None:
            if match and match.group(2) == heading:
                level = len(match.group(1))
            continue
        if match and len(match.group(1)) <= level:
            break
        body.append(line)
    assert level is not None, f"no section {heading!r}"
    return "\n".join(body)


def markdown_table(section: str) -> list[dict[str, str]]:
    """The first table of a markdown section as rows keyed by header."""
    rows = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    assert len(rows) >= 3, "no table found"

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = cells(rows[0])
    return [dict(zip(header, cells(line), strict=True)) for line in rows[2:]]


def anchors(text: str) -> set[str]:
    """GitHub's anchors of every heading."""
    found = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"^#+\s+(.*?)\s*$", line)
        if match:
            found.add(re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-"))
    return found


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())
