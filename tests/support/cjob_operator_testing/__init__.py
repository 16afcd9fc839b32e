"""Test doubles and harness for the operator's own tests (test support, not shipped).

They live in ``tests/support`` (on pytest's ``pythonpath``), outside
``operator/src``, so neither the wheel nor the operator image contains them;
``scripts/test.sh`` type-checks them with mypy strict.

- :class:`~.fake_kube.FakeKubernetes` — kmock's Kubernetes emulator made faithful
  enough for kopf 1.45 (resource versions, generations, 201 on create, status
  subresource, JSON-patch ``test`` ops answered with 422, finalizers, generateName,
  owner-reference garbage collection, namespaces).
- :class:`~.fake_driver.FakeDriver` — the driver control API (docs/architecture.md,
  'Control API') as a recording double that commits ``_metadata`` into a local store.
- :mod:`.harness` — run both on a background event loop, write a kubeconfig, and
  run ``kopf run -m cjob_operator.main`` as a subprocess.

Needs the development extras (``kmock``).
"""
