"""A batch goes from a source through two chained maps and a keyed step to the network
output, and on through the keyed step's chain to the sink, entering the subtask once.

Each hop between chained operators is a direct call from one operator's output into the
next operator; the subtask's loop hands each batch to its chain once and is not re-entered
per hop (on either side of the keyed edge), as Flink's ``OperatorChain`` wires it.
"""

from __future__ import annotations

from barrier_runtime_testing import call_trace

BATCHES = 12
BATCH_SIZE = 10
KEYS = 3


def test_each_batch_enters_the_subtask_once_and_chained_operators_call_each_other() -> None:
    trace = call_trace.trace_chain(BATCHES, BATCH_SIZE, keys=KEYS)

    for task in (call_trace.SOURCE_TASK, call_trace.KEYED_TASK):
        thread = trace.threads[task]
        # The thread's run() is the only call into task/subtask.py from another file:
        # no operator output routes back into the subtask, however many batches pass.
        assert dict(thread.subtask_entries) == {"task/subtask.py:Subtask.run": 1}, task
        # One pass of the subtask loop per batch, one hand-over to the chain.
        assert thread.calls["task/subtask.py:Subtask._after_batch"] == BATCHES, task

    source = trace.threads[call_trace.SOURCE_TASK].calls
    # map -> map -> key_by are reached by direct calls from the previous step's output ...
    assert source["task/chain_outputs.py:ChainedOutput.emit"] == 3 * BATCHES
    # ... and key_by's output ends at the network, once per batch.
    assert source["task/chain_outputs.py:NetworkOutput.emit"] == BATCHES
    assert source["task/output.py:SubtaskOutput.send"] == BATCHES

    counts: dict[int, int] = {}
    for row in trace.output:
        counts[row["key"]] = max(counts.get(row["key"], 0), row["count"])
    assert counts == {k: BATCHES * BATCH_SIZE // KEYS for k in range(KEYS)}
