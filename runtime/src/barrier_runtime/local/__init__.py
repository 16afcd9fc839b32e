"""The in-process host: an attempt's subtasks on threads of this process.

``runner`` hosts one attempt (every subtask on its own thread, channels in
memory) for the driver's restart loop; ``executor`` is the user-facing
:class:`~barrier_runtime.local.executor.LocalExecutor` built on it. The task
engine itself lives in :mod:`barrier_runtime.task`.
"""
