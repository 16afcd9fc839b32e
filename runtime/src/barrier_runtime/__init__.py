"""Checkpointed Jobs barrier runtime: streaming dataflows with asynchronous barrier snapshots."""
