"""The coordinator's policies: one small class per rule, each pure and tested alone.

Flink's ``CheckpointCoordinator`` grew to 110 KB because every rule lived in
it. Here each rule is a tiny object the coordinator asks a question:

- :mod:`.periodic` — when is the next periodic checkpoint due (``interval``)?
- :mod:`.min_pause` — has enough time passed since the last checkpoint *ended*?
- :mod:`.concurrency` — may one more checkpoint be in flight (``max_concurrent``)?
- :mod:`.requests` — combines the three above into one decision per trigger request.
- :mod:`.timeout` — when does a pending checkpoint expire?
- :mod:`.failures` — which failures count, and when do they force a job failover?
- :mod:`.subsumption` — which pending checkpoints a completed one makes obsolete.
- :mod:`.retention` — how many completed checkpoints the store keeps.
- :mod:`.barriers` — which barrier (aligned or unaligned) a checkpoint starts with.

Policies hold no locks and read no clock: the coordinator passes ``now`` in and
serialises every call under its own lock.
"""
