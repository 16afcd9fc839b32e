"""Kubernetes memory quantities (``1Gi``, ``512Mi``, ``2G``) and their Spark spelling.

>>> spark_memory("1Gi")
'1024m'
>>> spark_memory("512m")
'512m'
>>> spark_memory("2G")
'1907m'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTE]i?|[kmgt])?$")
_FACTORS = {
    None: 1,
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Ei": 1024**6,
    "K": 1000,
    "M": 1000**2,
    "G": 1000**3,
    "T": 1000**4,
    "E": 1000**6,
    "k": 1024,
    "m": 1024**2,
    "g": 1024**3,
    "t": 1024**4,
}


def memory_bytes(quantity: str) -> int:
    """Bytes in a Kubernetes quantity (or a Spark size such as ``512m``)."""
    match = _QUANTITY.match(quantity.strip())
    if not match:
        raise ValueError(f"invalid memory quantity {quantity!r}: use e.g. '1Gi' or '512Mi'")
    return int(float(match.group(1)) * _FACTORS[match.group(2)])


def spark_memory(quantity: str) -> str:
    """The same amount in Spark's notation (whole mebibytes)."""
    return f"{max(1, memory_bytes(quantity) // 1024**2)}m"


def pod_memory(quantity: str, overhead_fraction: float = 0.1, minimum_mib: int = 384) -> str:
    """A pod memory request for a JVM of ``quantity`` plus Spark's default overhead."""
    mib = memory_bytes(quantity) // 1024**2
    return f"{mib + max(minimum_mib, int(mib * overhead_fraction))}Mi"


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """How a pod's memory is split (all in MiB); ``pod`` is its request and limit.

    ``heap`` is the JVM heap (``spark.*.memory``, the spec's ``memory``);
    ``overhead`` is the JVM's native memory (Spark's default: 10 %, at least
    384 MiB); ``python`` is for the Python processes, which in this runtime hold
    the operators' state and the record batches in flight.
    """

    heap: int
    overhead: int
    python: int

    @property
    def pod(self) -> int:
        return self.heap + self.overhead + self.python

    @property
    def spark_overhead(self) -> str:
        """``spark.*.memoryOverhead``: everything that is not the heap (JVM native + Python)."""
        return f"{self.overhead + self.python}m"


EXECUTOR_PYTHON = (0.5, 512)
"""Executors: Python workers get half the heap again, at least 512 MiB."""
DRIVER_PYTHON = (0.25, 256)
"""The driver: the coordinator and control API in Python, a quarter of the heap, >= 256 MiB."""


def memory_budget(quantity: str, python: tuple[float, int], state_mib: int = 0) -> MemoryBudget:
    """The budget of a pod whose JVM heap is ``quantity``; ``state_mib`` is added for the
    Python processes' keyed state when it lives on disk (its memory budget, per slice).

    >>> b = memory_budget("2Gi", EXECUTOR_PYTHON)
    >>> (b.heap, b.overhead, b.python, b.pod, b.spark_overhead)
    (2048, 384, 1024, 3456, '1408m')
    >>> memory_budget("2Gi", EXECUTOR_PYTHON, state_mib=512).python
    1536
    """
    heap = max(1, memory_bytes(quantity) // 1024**2)
    fraction, minimum = python
    python_mib = max(minimum, int(heap * fraction)) + state_mib
    return MemoryBudget(heap, max(384, int(heap * 0.1)), python_mib)
