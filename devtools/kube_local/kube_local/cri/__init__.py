"""A real node: the kubelet of the same release as the control plane, on containerd's CRI.

* :mod:`~kube_local.cri.node`: :class:`~kube_local.cri.node.CriNode`, its processes
  (containerd, kubelet, kube-proxy, CoreDNS) and their order of start and stop;
* :mod:`~kube_local.cri.configs`: their configuration files (pure);
* :mod:`~kube_local.cri.images`: the pause image we build, and images from Docker;
* :mod:`~kube_local.cri.network`: the node address and what the network leaves behind.

Needs root, ``containerd`` and the CNI plugins (Debian: ``containerd``,
``containernetworking-plugins``); ``python -m kube_local check`` says what is missing.
"""
