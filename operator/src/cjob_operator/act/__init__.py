"""Side effects: the only package that talks to Kubernetes, the driver and storage.

- :mod:`.kube` — a small async JSON client over the official ``kubernetes`` client.
- :mod:`.control` — the driver's control API (bearer token; docs/architecture.md, 'Control API').
- :mod:`.catalog` — reads completed checkpoints and savepoints from the store.
- :mod:`.perform` — carries out one :class:`~cjob_operator.model.action.Action`.
"""
