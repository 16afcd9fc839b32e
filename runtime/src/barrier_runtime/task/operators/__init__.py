"""The operators of chained steps, one module per family, created by step type.

``base`` holds the operator contract and the snapshot records; ``registry``
the factories keyed by step type. The families: ``stateless`` (``flat_map``,
``filter``, ``map_batches``, pass-through), ``keyed`` (``stateful_map``,
``connect``), ``keyed_sum`` (vectorised keyed sums), ``process`` (keyed
process functions with timers), ``window`` and ``window_agg`` (event-time
windows, per record and vectorised), ``join`` (interval joins) and ``sink``.
Importing this package registers every family's factory.
"""

from barrier_runtime.task.operators import (
    base,
    join,
    keyed,
    keyed_sum,
    process,
    registry,
    sink,
    stateless,
    window,
    window_agg,
)
from barrier_runtime.task.operators.base import (
    CommitHook,
    Emit,
    Operator,
    Reject,
    SnapshotBuilder,
    StateBlob,
    StatefulOperator,
    add_keyed_state,
    key_fn_of,
)

__all__ = [
    "CommitHook",
    "Emit",
    "Operator",
    "Reject",
    "SnapshotBuilder",
    "StateBlob",
    "StatefulOperator",
    "add_keyed_state",
    "base",
    "join",
    "key_fn_of",
    "keyed",
    "keyed_sum",
    "process",
    "registry",
    "sink",
    "stateless",
    "window",
    "window_agg",
]
