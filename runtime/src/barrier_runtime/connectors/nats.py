"""NATS JetStream: a source read by stream sequence and an exactly-once sink deduplicated by id.

**Source.** :class:`NatsSource` reads one JetStream stream. Without
``subjects`` the whole stream is one partition (named after the stream);
with ``subjects`` every subject filter is a partition (named by the filter).
A partition's position is the stream sequence of the last message it
returned (``0``: none yet); it reads with an ephemeral, acknowledgement-free
pull consumer starting at ``position + 1``, so positions live in our
checkpoint and never in NATS. Unbounded by default (``[]`` when nothing is
there); ``bounded=True`` stops at the stream's last sequence seen at open.
If the stream's retention already deleted messages after the position, a
warning says how many were skipped.

**Sink.** :class:`NatsSink` is two-phase commit over JetStream's message
deduplication: ``pre_commit`` cuts a transaction of ``[subject, payload]``
entries (inline up to ``inline_limit``, else staged under ``staging_url``;
see :mod:`~barrier_runtime.connectors._staging`), and ``commit`` publishes
every entry with the header ``Nats-Msg-Id: {step}-{checkpoint}-{subtask}-{i}-
{nonce}``. A re-commit after a crash publishes the same ids and the server
drops the copies. **Exactly-once holds while a re-commit happens within the
stream's duplicate window** (``duplicate_window``, 2 minutes by default in
NATS; :func:`ensure_stream` sets it, and the sink warns when the stream's
window is shorter than ``min_duplicate_window``). Subjects may be templates
over the record's fields (``"orders.{region}"``).

Threading: the asyncio client runs in a helper thread (one per source
partition, one per sink object), see :mod:`~barrier_runtime.connectors._loop`.
``nats-py`` is imported only when a connection is made.
"""

from barrier_runtime.connectors._nats_client import ensure_stream
from barrier_runtime.connectors.nats_sink import NatsSink
from barrier_runtime.connectors.nats_source import NatsPartition, NatsSource, Payload

__all__ = ["NatsPartition", "NatsSink", "NatsSource", "Payload", "ensure_stream"]
