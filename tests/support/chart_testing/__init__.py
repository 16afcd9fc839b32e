"""Helpers for the Helm chart's tests (``tests/unit/chart``, ``tests/integration/chart``).

- :mod:`.chartkit` — finding ``helm`` and ``promtool``, rendering values combinations,
  parsing the docs the chart is checked against.
"""
