"""The Grafana dashboard: well-formed, every query valid PromQL, the panels issue 5 asks for,
and the ConfigMap carries the file unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_testing import chartkit

DASHBOARD = chartkit.DASHBOARDS / "checkpointed-jobs.json"
# issue 5: phase, checkpoint duration, size and age, failures by reason, alignment time,
# throughput and back-pressure, restarts
REQUIRED_PANELS = {
    "Phase",
    "Checkpoint duration",
    "Checkpoint size",
    "Checkpoint age",
    "Failures by reason",
    "Alignment time",
    "Records out per second",
    "Back-pressure",
    "Restarts (1h)",
}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def test_dashboard_is_well_formed(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] and dashboard["title"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "job"} <= variables
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"] and panel["description"], panel["title"]


def test_dashboard_has_the_panels_issue_5_asks_for(dashboard: dict[str, Any]) -> None:
    titles = {p["title"] for p in panels(dashboard)}
    assert titles >= REQUIRED_PANELS, f"missing {REQUIRED_PANELS - titles}"


def test_every_panel_filters_by_the_selected_jobs(dashboard: dict[str, Any]) -> None:
    for panel in panels(dashboard):
        for target in panel["targets"]:
            if "cjob_" in target["expr"]:
                assert 'namespace=~"$namespace", job=~"$job"' in target["expr"], panel["title"]


def test_every_query_is_valid_promql(
    dashboard: dict[str, Any], promtool_bin: str, tmp_path: Path
) -> None:
    recorded = []
    for panel in panels(dashboard):
        for target in panel["targets"]:
            expr = (
                target["expr"]
                .replace("$__rate_interval", "5m")
                .replace("$namespace", ".*")
                .replace("$job", ".*")
            )
            recorded.append({"record": f"panel_{panel['id']}_{target['refId']}", "expr": expr})
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recorded}]}))
    done = subprocess.run(
        [promtool_bin, "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_configmap_carries_the_dashboard_unchanged(helm_bin: str) -> None:
    rendered = chartkit.render(["grafanaDashboard.enabled=true"])
    configmap = chartkit.one(rendered, "ConfigMap")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"][DASHBOARD.name]) == json.loads(DASHBOARD.read_text())
