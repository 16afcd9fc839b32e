"""Channels between subtasks: message types and bounded in-memory channels with back-pressure."""
