"""Generators of the reference pages in ``docs/reference/`` (development tool, not shipped).

Each page is generated from the code or the manifest it documents, never written
by hand:

- ``docs/reference/crd.md`` from the CRD's OpenAPI schema (:mod:`.crd`);
- ``docs/reference/cli.md`` from the ``cjob`` argparse parser (:mod:`.cli`);
- ``docs/reference/metrics.md`` from the driver's and the operator's metric
  definitions (:mod:`.metrics`).

``scripts/gen-docs.sh`` (``python -m docs_gen``) writes them; ``--check`` only
compares. ``tests/unit/docs`` regenerates them in memory and fails when a
committed page differs, naming the page and the command that fixes it.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Mapping

from docs_gen import cli, crd, metrics

REGENERATE = "scripts/gen-docs.sh"
"""The command that rewrites every page (run from the repository root)."""

GENERATORS: Mapping[pathlib.Path, Callable[[pathlib.Path], str]] = {
    crd.OUTPUT: crd.generate,
    cli.OUTPUT: cli.generate,
    metrics.OUTPUT: metrics.generate,
}
"""Each page, relative to the repository root, and the function that renders it."""

ROOT = pathlib.Path(__file__).resolve().parents[3]
"""The repository this generator belongs to."""


def generate_all(root: pathlib.Path = ROOT) -> dict[pathlib.Path, str]:
    """Every page's expected text, by path relative to ``root``."""
    return {path: generate(root) for path, generate in GENERATORS.items()}


def stale(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """The pages whose committed text differs from what the sources give."""
    out = []
    for path, expected in generate_all(root).items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != expected:
            out.append(path)
    return out


__all__ = ["GENERATORS", "REGENERATE", "ROOT", "generate_all", "stale"]
