"""Execution planning: chaining logical steps into tasks and wiring their channels."""
