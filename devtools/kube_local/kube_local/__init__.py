"""kube-local: a real Kubernetes control plane on this machine, and a node for its pods.

Not part of the product (no image contains it); run it with ``scripts/kube-local.sh up``
or ``python -m kube_local serve --state-dir DIR --node kubelet``.

* :mod:`~kube_local.control_plane`: etcd, kube-apiserver, kube-controller-manager and
  kube-scheduler as local processes (built from their Go modules by
  ``scripts/kube-build.sh``); :mod:`~kube_local.certs`: their CA and credentials;
* :mod:`~kube_local.cri`: the node ``kube-local``: the kubelet of the same release on
  containerd, kube-proxy and CoreDNS;
* ``__main__``: the process ``kube-local.sh`` starts.
"""
