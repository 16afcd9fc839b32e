"""What building a dataflow raises: the one error every builder module shares.

It sits below :mod:`~barrier_runtime.api.dataflow`, :mod:`~barrier_runtime.api.streams`
and the event-time steps so that none of them imports another to raise it.
"""

from __future__ import annotations


class InvalidDataflowError(ValueError):
    """The dataflow cannot run as built; the message says which step and why."""
