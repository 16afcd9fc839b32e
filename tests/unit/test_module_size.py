"""Product modules stay under 400 lines (CONVENTIONS: split by responsibility instead)."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRODUCT = (ROOT / "runtime" / "src", ROOT / "operator" / "src")
LIMIT = 400


def test_every_product_module_is_under_the_limit() -> None:
    modules = [p for top in PRODUCT for p in top.rglob("*.py")]
    assert len(modules) > 100
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in modules
        if (n := len(p.read_text(encoding="utf-8").splitlines())) >= LIMIT
    }
    assert too_long == {}, "split these by responsibility"
