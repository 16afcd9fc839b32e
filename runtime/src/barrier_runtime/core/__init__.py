"""The ground floor: checkpoint ids and kinds, checkpoint metadata, the clock.

Every other package may import from here; nothing here imports from any other
package of the runtime. ``types`` holds the shared ids and closed sets (checkpoint
id, kind, mode, failure reason); ``metadata`` the checkpoint's ``_metadata``
document and the task acknowledgements it is made from; ``clock`` the injected
time source of protocol and policy code.
"""
