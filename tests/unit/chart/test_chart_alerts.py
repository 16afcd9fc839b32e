"""Alert rules: promtool check/test, the PrometheusRule renders the same rules, runbooks exist,
and every metric the rules read is one the operator or the driver exports."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_testing import chartkit
from prometheus_client.registry import CollectorRegistry

from cjob_operator import metrics as operator_metrics

REQUIRED_ALERTS = {
    "CheckpointFailures",
    "CheckpointStale",
    "RestartLoop",
    "JobFailed",
    "OperatorDown",
    "ReconcileErrors",
}
RUNTIME_METRICS = chartkit.ROOT / "runtime" / "src" / "barrier_runtime" / "control" / "metrics.py"
# Read by the rules when present, exported by nobody yet (docs/operations.md, Alerts):
# CheckpointStale uses N x this interval and falls back to a fixed threshold without it.
PROPOSED = {"cjob_checkpoint_interval_seconds"}
THRESHOLD = "cjob:alert_threshold:"


def rules_doc() -> dict[str, Any]:
    return chartkit.load_yaml(chartkit.RULES_FILE)  # type: ignore[no-any-return]


def rules() -> list[dict[str, Any]]:
    return [rule for group in rules_doc()["groups"] for rule in group["rules"]]


def alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in rules() if "alert" in rule}


def promtool(binary: str, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_rules_file_passes_promtool_check(promtool_bin: str) -> None:
    out = promtool(promtool_bin, "check", "rules", str(chartkit.RULES_FILE))
    assert "SUCCESS" in out


def test_alert_unit_tests_pass(promtool_bin: str) -> None:
    files = sorted(chartkit.PROMTOOL_TESTS.glob("*.yaml"))
    assert files
    promtool(promtool_bin, "test", "rules", *map(str, files))


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    firing: set[str] = set()
    silent: set[str] = set()
    for path in chartkit.PROMTOOL_TESTS.glob("*.yaml"):
        suite = chartkit.load_yaml(path)
        assert [Path(path.parent, f).resolve() for f in suite["rule_files"]] == [
            chartkit.RULES_FILE
        ], f"{path.name} must test {chartkit.RULES_FILE}"
        for case in suite["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    assert set(alerts()) == REQUIRED_ALERTS
    assert firing >= REQUIRED_ALERTS, f"never tested firing: {REQUIRED_ALERTS - firing}"
    assert silent >= REQUIRED_ALERTS, f"never tested not firing: {REQUIRED_ALERTS - silent}"


def test_every_alert_has_severity_summary_description_and_a_runbook() -> None:
    doc = chartkit.OPERATIONS_DOC.read_text()
    anchors = chartkit.anchors(doc)
    table = {
        row["alert"].split("]")[0].lstrip("[")
        for row in chartkit.markdown_table(chartkit.markdown_section(doc, "Alerts"))
    }
    for name, rule in alerts().items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], name
        url = annotations["runbook_url"]
        assert url.split("#")[0].endswith("/docs/operations.md"), url
        assert url.split("#")[1] == name.lower() and name.lower() in anchors, (
            f"{name}: no runbook section '### {name}' in docs/operations.md"
        )
        assert name in table, f"{name} is missing from the Alerts table"


def _metric_names(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w:])(cjob_[a-z0-9_]+)", text))


def _exported_by_operator() -> set[str]:
    names: set[str] = set()
    registry: CollectorRegistry = operator_metrics.REGISTRY
    for family in registry.collect():
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_sum", "_count"),
            "gauge": ("",),
        }[family.type]
        names |= {family.name + s for s in suffixes}
    return names


def _exported_by_driver() -> set[str]:
    if not RUNTIME_METRICS.is_file():
        pytest.skip(f"{RUNTIME_METRICS} is missing: cannot check the driver's metric names")
    names = _metric_names(RUNTIME_METRICS.read_text())
    return names | {n + s for n in names for s in ("_bucket", "_sum", "_count")}


def test_rules_and_dashboard_read_only_exported_metrics() -> None:
    known = _exported_by_operator() | _exported_by_driver() | PROPOSED
    used = _metric_names(chartkit.RULES_FILE.read_text())
    for dashboard in chartkit.DASHBOARDS.glob("*.json"):
        used |= _metric_names(dashboard.read_text())
    assert not used - known, f"metrics nobody exports: {sorted(used - known)}"
    operator_side = {
        "cjob_jobs",
        "cjob_reconcile_errors_total",
        "cjob_last_completed_checkpoint_timestamp_seconds",
        "cjob_checkpoints_failed_total",
        "cjob_job_restarts_total",
    }
    assert operator_side <= _exported_by_operator()


def test_every_threshold_in_values_reaches_its_recording_rule(helm_bin: str) -> None:
    schema = yaml.safe_load((chartkit.CHART / "values.schema.json").read_text())
    rule_props = schema["properties"]["prometheusRule"]["properties"]
    keys = sorted(rule_props["thresholds"]["properties"])
    sets = [f"prometheusRule.thresholds.{key}={1000 + i}" for i, key in enumerate(keys)]
    rendered = {
        r["record"]: r["expr"]
        for g in _rendered_groups(sets)
        for r in g["rules"]
        if r.get("record", "").startswith(THRESHOLD)
    }
    in_file = {r["record"] for r in rules() if r.get("record", "").startswith(THRESHOLD)}
    assert set(rendered) == in_file
    assert sorted(rendered.values()) == [f"vector({1000 + i})" for i in range(len(keys))], (
        "each values.schema.json threshold must replace exactly one recording rule"
    )
    assert set(rule_props["alerts"]["properties"]) == REQUIRED_ALERTS


def _rendered_groups(sets: list[str]) -> list[dict[str, Any]]:
    rule = chartkit.one(chartkit.render(["prometheusRule.enabled=true", *sets]), "PrometheusRule")
    return rule["spec"]["groups"]  # type: ignore[no-any-return]


def test_prometheus_rule_renders_the_rules_file_unchanged_by_default(helm_bin: str) -> None:
    assert _rendered_groups([]) == rules_doc()["groups"]


def test_prometheus_rule_applies_overrides(helm_bin: str) -> None:
    groups = _rendered_groups(
        [
            "prometheusRule.thresholds.checkpointStaleSeconds=1200",
            "prometheusRule.thresholds.checkpointFailureRatio=0.25",
            "prometheusRule.alerts.JobFailed.severity=page",
            "prometheusRule.alerts.RestartLoop.for=10m",
            "prometheusRule.alerts.ReconcileErrors.enabled=false",
            "prometheusRule.alertLabels.team=streaming",
            "prometheusRule.runbookBaseUrl=https://wiki.example/cjob/ops/",
        ]
    )
    by_name = {r.get("alert") or r["record"]: r for g in groups for r in g["rules"]}
    assert by_name[THRESHOLD + "checkpoint_stale_seconds"]["expr"] == "vector(1200)"
    assert by_name[THRESHOLD + "checkpoint_failure_ratio"]["expr"] == "vector(0.25)"
    assert by_name[THRESHOLD + "restarts_per_30m"]["expr"] == "vector(3)"
    assert by_name["JobFailed"]["labels"] == {"severity": "page", "team": "streaming"}
    assert by_name["RestartLoop"]["for"] == "10m"
    assert "ReconcileErrors" not in by_name
    assert by_name["OperatorDown"]["annotations"]["runbook_url"] == (
        "https://wiki.example/cjob/ops#operatordown"
    )


def test_rendered_overrides_change_when_alerts_fire(
    helm_bin: str, promtool_bin: str, tmp_path: Path
) -> None:
    groups = _rendered_groups(["prometheusRule.thresholds.checkpointStaleSeconds=1200"])
    rules_path = tmp_path / "rendered-rules.yaml"
    rules_path.write_text(yaml.safe_dump({"groups": groups}))
    promtool(promtool_bin, "check", "rules", str(rules_path))
    stale = {
        "rule_files": [rules_path.name],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": "cjob_last_completed_checkpoint_timestamp_seconds"
                        '{namespace="a",job="j",instance="op"}',
                        "values": "0x30",
                    },
                    {
                        "series": 'cjob_jobs{namespace="a",job="j",phase="Running",instance="op"}',
                        "values": "1x30",
                    },
                ],
                "alert_rule_test": [
                    {"eval_time": "15m", "alertname": "CheckpointStale", "exp_alerts": []},
                    {
                        "eval_time": "22m",
                        "alertname": "CheckpointStale",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "critical",
                                    "namespace": "a",
                                    "job": "j",
                                },
                                "exp_annotations": {
                                    k: v.replace("{{ $labels.namespace }}", "a")
                                    .replace("{{ $labels.job }}", "j")
                                    .replace("{{ $value | humanizeDuration }}", "22m 0s")
                                    for k, v in alerts()["CheckpointStale"]["annotations"].items()
                                },
                            }
                        ],
                    },
                ],
            }
        ],
    }
    test_path = tmp_path / "stale-test.yaml"
    test_path.write_text(yaml.safe_dump(stale))
    promtool(promtool_bin, "test", "rules", str(test_path), cwd=tmp_path)
