"""The task engine: what runs one subtask, on whichever host.

Both hosts run it: :mod:`barrier_runtime.local` on threads of one process and
:mod:`barrier_runtime.spark` in the workers of a Spark barrier stage. It holds the
subtask loop (``subtask``), the operators of a chained step (``operators``,
``batch_operators``), routing to downstream subtasks (``routing``), in-process
channels (``channel``), snapshots of operator and channel state (``snapshots``),
the services an attempt's subtasks share (``attempt``), control messages from
the driver (``control``), rejected-record handling (``rejects``), fault
injection points (``faults``) and the per-attempt counters (``metrics``).

It imports no host: nothing here knows about Spark, threads of the local
executor or the driver's restart loop.
"""
