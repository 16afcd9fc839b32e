"""The task engine: what runs one subtask, on whichever host.

Both hosts run it: :mod:`barrier_runtime.local` on threads of one process and
:mod:`barrier_runtime.spark` in the workers of a Spark barrier stage. It holds the
subtask loop (``subtask``) and its three parts behind narrow ports: the input
gate with the barrier handler and unaligned capture (``input_gate``), the owner
of every snapshot from copy to acknowledgement (``subtask_checkpointing``) and
the output channels (``output``); the operator chain of a subtask (``chain``),
wired once to the outputs of ``chain_outputs`` (direct calls between chained
operators, the network at the chain's end), and the operators of the
chained steps (the ``operators`` package, one module per family, created by
step type), routing to downstream subtasks (``routing``), in-process channels
(``channel``), in-flight records kept as channel state (``snapshots``),
the services an attempt's subtasks share (``attempt``), rejected-record
handling (``rejects``) and the per-subtask counters (``metrics``). What the
driver and the engine exchange (control messages, counters, fault points)
lives on the ground floor, :mod:`barrier_runtime.core`.

It imports no host: nothing here knows about Spark, threads of the local
executor or the driver's restart loop.
"""
