"""The node: a kubelet that runs stored Pods as containers on the local Docker engine.

* :mod:`~kube_local.node.kubelet`: pod workers (admit, configure, run, probe,
  terminate) and the loopback address pool;
* :mod:`~kube_local.node.podspec`: pure translation of a pod spec into the engine's
  options (env with fieldRef/secretKeyRef/``$(VAR)``, volumes, limits, user);
* :mod:`~kube_local.node.engine`: the ``docker`` command line, asynchronously;
* :mod:`~kube_local.node.hosts`: cluster DNS as one shared ``/etc/hosts``;
* :mod:`~kube_local.node.probes`: readiness and liveness probes;
* :mod:`~kube_local.node.status`: the status, Node and Event shapes it writes;
* :mod:`~kube_local.node.deployments`: Deployments (pods straight from the template).
"""
