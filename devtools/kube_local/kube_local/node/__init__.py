"""The node: an agent against the real API server that runs the pods the scheduler binds
to it as containers on the local Docker engine.

* :mod:`~kube_local.node.kubelet`: registration, Lease, watches, pod workers' wiring and
  the loopback address pool; :mod:`~kube_local.node.pod_worker`: one pod's life;
* :mod:`~kube_local.node.api`: the client (one per identity: node, kube-proxy);
* :mod:`~kube_local.node.logs`: ``/containerLogs`` over TLS for ``kubectl logs``;
* :mod:`~kube_local.node.podspec`: pure translation of a pod spec into the engine's
  options (env with fieldRef/secretKeyRef/``$(VAR)``, volumes, limits, user);
* :mod:`~kube_local.node.engine`: the ``docker`` command line, asynchronously;
* :mod:`~kube_local.node.hosts`: cluster DNS as one shared ``/etc/hosts``;
* :mod:`~kube_local.node.probes`: readiness and liveness probes;
* :mod:`~kube_local.node.status`: the status, Node, Lease and Event shapes it writes.
"""
