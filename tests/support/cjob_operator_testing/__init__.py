"""Test doubles and harness for the operator's own tests (test support, not shipped).

They live in ``tests/support`` (on pytest's ``pythonpath``), outside
``operator/src``, so neither the wheel nor the operator image contains them;
``scripts/test.sh`` type-checks them with mypy strict.

- :mod:`.envtest` — a real control plane (etcd, kube-apiserver, kube-controller-manager
  built by ``scripts/kube-build.sh``), the CRD, the chart's RBAC, TokenRequest tokens.
- :mod:`.node` — the harness playing the scheduler (binds pods) and a node (registers,
  keeps its Lease, writes ``pods/status``, confirms deletions) with real identities;
  :mod:`.kubelet` runs that node's pods as local processes.
- :class:`~.fake_driver.FakeDriver` — the driver control API (docs/architecture.md,
  'Control API') as a recording double that commits ``_metadata`` into a local store.
- :mod:`.harness` — all of it: the node and the fake driver on a background event
  loop, and ``kopf run -m cjob_operator.main`` as a subprocess holding the chart's
  ServiceAccount's token.
- :mod:`.crd_cases` — the manifests that each break one rule or constraint of the CRD,
  and what kube-apiserver answers to each (``tests/integration/crds``).
- :mod:`.crd_server` — the CRD on a real kube-apiserver: ``kubectl`` with JSON on stdin,
  a stored job, a refusal's causes.
"""
