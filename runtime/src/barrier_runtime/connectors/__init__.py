"""Connectors: sources and two-phase-commit sinks built on the contracts in ``barrier_runtime.api``."""
