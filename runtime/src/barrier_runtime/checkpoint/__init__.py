"""Checkpoint coordination: ids, barriers, the coordinator and its policies, metadata.

Everything here is pure logic driven by an injected clock; I/O reaches it only
through the narrow protocols it is given (a task gateway, a checkpoint store).
"""
