"""Checkpoint storage: object-store adapters (local directory, S3) and the checkpoint layout on top."""
