"""kube-local: an emulated Kubernetes API server for tests and for trying the operator.

Not part of the product (the operator image does not contain it); run it with
``scripts/kube-local.sh up`` or ``python -m kube_local serve --state-dir DIR``.

Why a small aiohttp server rather than growing kmock: kmock (0.8) is built for
asserting on requests in tests; its emulator keys its storage and watch buses on its
own request parsing, keeps no global resourceVersion or event history, and has no
seam for selectors, RBAC or TLS. Everything issue 10 asks for (ordered watches with
410 Gone, selectors on list and watch, GC, RBAC, Tables, apply) would have meant
overriding nearly all of it, so this package owns storage and routing (~1,900 lines)
and keeps the same shapes as kmock's ``KubernetesEmulator`` where they meet (objects
by resource/namespace/name). The kmock adapter in ``cjob_operator_testing.fake_kube``
keeps serving today's operator tests.

Layers (each module's docstring says what belongs there):

* :mod:`~kube_local.store`: objects, the global resourceVersion, bounded watch history;
* :mod:`~kube_local.controllers`: GC, namespaces, CRD establishment, token Secrets;
* :mod:`~kube_local.verbs`: create/update/patch/delete semantics;
* :mod:`~kube_local.patches`, :mod:`~kube_local.selectors`, :mod:`~kube_local.tables`,
  :mod:`~kube_local.defaults` (CRD schema defaults), :mod:`~kube_local.protobuf` (the
  few protobuf bodies typed Go clients send);
* :mod:`~kube_local.auth` (tokens), :mod:`~kube_local.rbac` (authorization);
* :mod:`~kube_local.server` (HTTP, discovery, watches), :mod:`~kube_local.pki` (TLS,
  kubeconfig), ``__main__`` (the process ``kube-local.sh`` starts).

Seam for the kubelet phase: ``ApiServer.store.listeners`` receives every event
in-process (or watch pods over HTTPS with the admin token); pod status goes through
the ``pods/status`` subresource; namespaces carry ``kube-root-ca.crt`` and
ServiceAccounts get tokens from the TokenRequest subresource.
"""

from kube_local.server import ApiServer

__all__ = ["ApiServer"]
