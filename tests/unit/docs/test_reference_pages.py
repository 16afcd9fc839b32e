"""The committed pages in docs/reference/ are exactly what the generator makes of the sources.

When one fails: run ``scripts/gen-docs.sh`` from the repository root and commit the
pages it rewrote (the failure names the page and shows the start of the difference).
"""

from __future__ import annotations

import difflib
import doctest
import importlib
import os
import pathlib
import re
import subprocess
import sys

import pytest

import docs_gen
from docs_gen import cli, crd, markdown

ROOT = docs_gen.ROOT
PAGES = sorted(docs_gen.GENERATORS, key=str)
_LINK = re.compile(r"\]\(#([^)]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def _diff(committed: str, expected: str, path: pathlib.Path) -> str:
    lines = difflib.unified_diff(
        committed.splitlines(),
        expected.splitlines(),
        f"{path} (committed)",
        f"{path} (from the sources)",
        lineterm="",
        n=1,
    )
    shown = list(lines)
    more = f"\n… {len(shown) - 60} more diff lines" if len(shown) > 60 else ""
    return "\n".join(shown[:60]) + more


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_the_committed_page_matches_its_sources(page: pathlib.Path) -> None:
    expected = docs_gen.GENERATORS[page](ROOT)
    target = ROOT / page
    committed = target.read_text(encoding="utf-8") if target.is_file() else ""
    if committed != expected:
        pytest.fail(
            f"{page} has drifted from the code it documents: regenerate it with "
            f"`{docs_gen.REGENERATE}` (from the repository root) and commit the result.\n"
            + _diff(committed, expected, page),
            pytrace=False,
        )


def test_the_check_mode_names_a_drifted_page(tmp_path: pathlib.Path) -> None:
    for path, text in docs_gen.generate_all(ROOT).items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    (tmp_path / crd.CRD_PATH).parent.mkdir(parents=True)
    (tmp_path / crd.CRD_PATH).write_bytes((ROOT / crd.CRD_PATH).read_bytes())
    (tmp_path / cli.OUTPUT).write_text("stale\n", encoding="utf-8")
    assert docs_gen.stale(tmp_path) == [cli.OUTPUT]


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_every_link_inside_a_page_reaches_one_of_its_headings(page: pathlib.Path) -> None:
    text = docs_gen.GENERATORS[page](ROOT)
    anchors = [markdown.slug(h.replace("&lt;", "<")) for h in _HEADING.findall(text)]
    duplicates = sorted({a for a in anchors if anchors.count(a) > 1})
    assert not duplicates, f"{page}: headings share the anchors {duplicates}"
    dangling = sorted(set(_LINK.findall(text)) - set(anchors))
    assert not dangling, f"{page}: links to missing headings {dangling}"


@pytest.mark.parametrize("module", ["docs_gen.markdown", "docs_gen.crd"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0
    assert result.failed == 0


def test_the_regenerate_command_checks_the_committed_pages() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / docs_gen.REGENERATE), "--check"],
        env={**os.environ, "PYTHON": sys.executable},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
