"""The Checkpointed Jobs operator: a kopf controller for ``CheckpointedJob`` resources.

Layers, one direction only::

    handlers (kopf) → reconcile → observe → decide (pure) → act → status

- :mod:`cjob_operator.model` — spec/status value objects, enums, durations.
- :mod:`cjob_operator.decide` — the pure decision function (no kopf, no kubernetes).
- :mod:`cjob_operator.manifests` — pure builders of the driver Pod/Service/ConfigMap/Secret.
- :mod:`cjob_operator.validate` — spec validation (incl. the ``sparkConf`` deny-list).
- :mod:`cjob_operator.act` — the only code that talks to Kubernetes, the driver and storage.
- :mod:`cjob_operator.handlers` / :mod:`cjob_operator.main` — the thin kopf layer.

Start it with ``kopf run -m cjob_operator.main``.
"""

GROUP = "checkpointed.dev"
VERSION = "v1alpha1"
KIND = "CheckpointedJob"
PLURAL = "checkpointedjobs"
API_VERSION = f"{GROUP}/{VERSION}"

__all__ = ["API_VERSION", "GROUP", "KIND", "PLURAL", "VERSION"]
