"""The chart's CRD is the repository's CRD, byte for byte (Helm installs crds/ as is)."""

from __future__ import annotations

import yaml
from chart_testing import chartkit

ROOT_CRD = chartkit.ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
CHART_CRDS = chartkit.CHART / "crds"


def test_chart_crd_is_identical_to_the_repository_crd() -> None:
    chart_crd = CHART_CRDS / ROOT_CRD.name
    assert chart_crd.read_bytes() == ROOT_CRD.read_bytes(), (
        f"{chart_crd} differs from {ROOT_CRD}: copy it "
        f"(cp {ROOT_CRD.relative_to(chartkit.ROOT)} {chart_crd.relative_to(chartkit.ROOT)}) "
        "and note the CRD upgrade in the release notes (docs/operations.md, Upgrading)"
    )


def test_chart_ships_only_that_crd() -> None:
    assert sorted(p.name for p in CHART_CRDS.iterdir()) == [ROOT_CRD.name]


def test_rendered_crd_is_the_repository_crd(helm_bin: str) -> None:
    crds = chartkit.of_kind(chartkit.render(include_crds=True), "CustomResourceDefinition")
    assert crds == [yaml.safe_load(ROOT_CRD.read_text())]


def test_templates_never_render_the_crd(helm_bin: str) -> None:
    # Only crds/ may hold it: a templated CRD would be deleted by `helm uninstall`.
    for combo in chartkit.COMBOS.values():
        assert not chartkit.of_kind(chartkit.render(combo), "CustomResourceDefinition")


def test_upgrade_path_is_documented() -> None:
    upgrading = chartkit.markdown_section(chartkit.OPERATIONS_DOC.read_text(), "Upgrading")
    assert "helm show crds" in upgrading
    assert "kubectl apply --server-side" in upgrading
