"""The ground floor: checkpoint ids and kinds, checkpoint metadata, the clock.

Every other package may import from here; nothing here imports from any other
package of the runtime. ``types`` holds the shared ids and closed sets (checkpoint
id, kind, mode, failure reason); ``metadata`` the checkpoint's ``_metadata``
document and the task acknowledgements it is made from; ``clock`` the injected
time source of protocol and policy code.

It is also the floor the driver and the task engine both stand on, so the
driver never imports :mod:`barrier_runtime.task`: the messages the driver
posts to running subtasks (``task_messages``), the counters subtasks report
(``task_metrics``) and the crash-injection points both sides check
(``faults``); and the errors of the coordinator's metadata-store port
(``store_errors``), which storage adapters raise so that
:mod:`barrier_runtime.checkpoint` never imports :mod:`barrier_runtime.storage`.
"""
