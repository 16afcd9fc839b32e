"""Connectors: sources and two-phase-commit sinks built on the ``barrier_runtime.api`` contracts."""
