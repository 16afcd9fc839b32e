"""The node's configuration files, as text (pure: no I/O).

Each builder takes the :class:`Layout` of one node and returns what its component reads.
The choices that make a kubelet run on a machine like ours (cgroup v1 in a VM, root
without ``CAP_SYS_RESOURCE``, no ``nft``, no ``dummy`` links) are commented where made.

>>> layout = Layout(Path("/s"), "10.250.0.1", "10.244.0.0/24")
>>> "bind 10.250.0.1" in corefile(layout, Path("/s/kubeconfig"))
True
>>> json.loads(cni_conflist(layout))["plugins"][0]["ipam"]["ranges"]
[[{'subnet': '10.244.0.0/24'}]]
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

NODE = "kube-local"
PAUSE_IMAGE = "localhost/pause:local"
CNI_NETWORK = "cjob-kube-local"
POD_BRIDGE = "cni-cjob0"
NODE_LINK = "cjob0"
KUBELET_PORT = 10350
"""Not the usual 10250, which a kubelet the machine runs already would hold."""
CNI_BIN_DIRS = ("/usr/lib/cni", "/opt/cni/bin")


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """Where one node keeps its state and which addresses it owns."""

    state: Path
    node_ip: str
    pod_cidr: str

    def path(self, *parts: str) -> Path:
        return self.state.joinpath("node", *parts)

    @property
    def socket(self) -> Path:
        return socket_of(self.state)


def socket_of(state: Path) -> Path:
    """containerd's socket for the node of the state directory ``state``."""
    return state.joinpath("node", "containerd.sock")


def containerd_toml(layout: Layout, cni_bin: str) -> str:
    return f"""version = 2
root = "{layout.path("containerd", "root")}"
state = "{layout.path("containerd", "state")}"
[grpc]
  address = "{layout.socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # root here lacks CAP_SYS_RESOURCE: lowering a container's OOM score is all it may do
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{layout.path("cni")}"
"""


def cni_conflist(layout: Layout) -> str:
    """A bridge network with masquerading out of the pod range and hairpin (a pod reaching
    itself through its Service), addresses from ``host-local`` kept under the state."""
    bridge = {
        "type": "bridge",
        "bridge": POD_BRIDGE,
        "isGateway": True,
        "ipMasq": True,
        "hairpinMode": True,
        "ipam": {
            "type": "host-local",
            "dataDir": str(layout.path("cni-ipam")),
            "ranges": [[{"subnet": layout.pod_cidr}]],
            "routes": [{"dst": "0.0.0.0/0"}],
        },
    }
    portmap = {"type": "portmap", "capabilities": {"portMappings": True}}
    doc = {"cniVersion": "0.4.0", "name": CNI_NETWORK, "plugins": [bridge, portmap]}
    return json.dumps(doc, indent=1)


def kubelet_config(layout: Layout, ca: Path, serving: tuple[Path, Path]) -> str:
    """The KubeletConfiguration. Cgroups: cgroupfs without QoS cgroups or node allocatable
    enforcement (the VM's cgroup v1 hierarchy is not ours to reorganise); container memory
    limits are still enforced (a pod over its limit is OOMKilled)."""
    return f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
address: {layout.node_ip}
port: {KUBELET_PORT}
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: {ca}}}
authorization: {{mode: AlwaysAllow}}
tlsCertFile: {serving[0]}
tlsPrivateKeyFile: {serving[1]}
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://{layout.socket}
failSwapOn: false
evictionHard: {{}}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: {layout.path("pod-logs")}
resolvConf: /etc/resolv.conf
clusterDNS: [{layout.node_ip}]
clusterDomain: cluster.local
"""


def kube_proxy_config(layout: Layout, kubeconfig: Path) -> str:
    """iptables mode (nftables mode needs the ``nft`` command); conntrack left as the
    machine has it (setting its sysctls is not allowed here)."""
    return f"""apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
hostnameOverride: {NODE}
mode: iptables
clusterCIDR: {layout.pod_cidr}
bindAddress: {layout.node_ip}
healthzBindAddress: ""
metricsBindAddress: ""
conntrack: {{maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}}
"""


def corefile(layout: Layout, kubeconfig: Path) -> str:
    """Cluster DNS on the node address (the kubelet's ``clusterDNS``), names from the API."""
    return f""".:53 {{
    bind {layout.node_ip}
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} {NODE}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . /etc/resolv.conf
    cache 5
}}
"""
