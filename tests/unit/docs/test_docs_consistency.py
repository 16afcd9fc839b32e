"""The hand-written docs agree with the code: metric names, links between pages, references.

* docs/operations.md sends readers to the generated metrics reference instead of
  keeping its own list (which went stale: five exported metrics were missing);
* every ``cjob_…`` metric name a page, the alert rules or the dashboard mentions is
  one the code exports;
* every relative link in README.md and docs/ reaches an existing file and, with an
  anchor, one of its headings; every page in docs/ is linked from README.md;
* no code comment sends readers to a design document outside the repository.
"""

from __future__ import annotations

import functools
import pathlib
import re

import pytest

import docs_gen
from docs_gen import markdown, metrics

ROOT = docs_gen.ROOT
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
NOT_METRICS = frozenset({"cjob_operator", "cjob_operator_testing", "cjob_bench"})
"""``cjob_…`` words in the docs that are not metric names: package names."""
_METRIC = re.compile(r"\bcjob_[a-z0-9_]*[a-z0-9]\b")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"``.+?``|`[^`\n]+`")
_SECTION_REF = re.compile(r"docs/architecture\.md,\s+'([^']+)'")


@functools.cache
def _exported() -> set[str]:
    return {
        n
        for m in (*metrics.driver(), *metrics.operator())
        for n in (m.family, m.exposed, *m.series_names)
    }


def _rel(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def test_operations_links_the_metrics_reference_instead_of_listing_metrics() -> None:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert "(reference/metrics.md)" in text
    section = text.split("## Monitoring", 1)[1].split("\n## ", 1)[0]
    listed = set(_METRIC.findall(section)) - NOT_METRICS
    assert len(listed) < 5, (
        f"docs/operations.md#monitoring lists metrics again ({sorted(listed)}): link "
        "docs/reference/metrics.md, which is generated from the code, instead"
    )


SOURCES = [
    *PAGES,
    ROOT / "charts/checkpointed-operator/files/prometheus-rules.yaml",
    ROOT / "charts/checkpointed-operator/files/dashboards/checkpointed-jobs.json",
]


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_every_metric_a_page_mentions_is_exported(path: pathlib.Path) -> None:
    mentioned = set(_METRIC.findall(path.read_text(encoding="utf-8"))) - NOT_METRICS
    unknown = sorted(mentioned - _exported())
    assert not unknown, f"{_rel(path)} mentions metrics the code does not export: {unknown}"


@functools.cache
def _anchors(page: pathlib.Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {
        markdown.slug(re.sub(r"[`*]|&lt;|\[|\]\([^)]*\)", "", h)) for h in _HEADING.findall(text)
    }


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_reaches_a_file_and_heading(page: pathlib.Path) -> None:
    text = _CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{_rel(page)}: broken links {broken}"


def test_the_readme_links_every_page_in_docs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [_rel(p) for p in DOCS if f"({_rel(p)})" not in text]
    assert not missing, f"README.md's documentation list misses {missing}"


def test_code_comments_point_inside_the_repository() -> None:
    stale = [
        f"{_rel(p)}:{n}"
        for top in ("runtime", "operator", "charts", "crds")
        for p in sorted((ROOT / top).rglob("*"))
        if p.is_file() and p.suffix in (".py", ".yaml", ".yml", ".tpl", ".txt", ".json", ".md")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "DESIGN" in line
    ]
    assert not stale, f"references to a design document outside the repository: {stale}"


def _architecture_references() -> set[str]:
    found: set[str] = set()
    for top in ("runtime", "operator", "charts", "crds"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".yaml"):
                found.update(_SECTION_REF.findall(path.read_text(encoding="utf-8")))
    return found


def test_the_architecture_sections_code_points_to_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    referenced = _architecture_references()
    assert {"Control API", "Checkpoint storage"} <= referenced
    missing = sorted(s for s in referenced if f"\n## {s}\n" not in text)
    assert not missing, f"code points to sections docs/architecture.md lacks: {missing}"
