"""Checkpointed Jobs barrier runtime: streaming dataflows with asynchronous barrier snapshots."""

from barrier_runtime.core.values import register_value_type

__all__ = ["register_value_type"]
