"""kube-local: a real Kubernetes control plane on this machine, and a node for its pods.

Not part of the product (no image contains it); run it with ``scripts/kube-local.sh up``
or ``python -m kube_local serve --state-dir DIR --node``.

* :mod:`~kube_local.control_plane`: etcd, kube-apiserver, kube-controller-manager and
  kube-scheduler as local processes (built from their Go modules by
  ``scripts/kube-build.sh``); :mod:`~kube_local.certs`: their CA and credentials;
* :mod:`~kube_local.node`: the node agent: registers the Node ``kube-local`` and runs
  the pods the real scheduler binds to it as Docker containers;
* ``__main__``: the process ``kube-local.sh`` starts.
"""
