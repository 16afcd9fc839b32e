"""Errors of the Spark host that a user can act on."""

from __future__ import annotations


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here (no pyspark, no Java, too few slots); the message says what to do."""
