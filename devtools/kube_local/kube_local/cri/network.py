"""The node's address and what its network leaves behind.

The node needs an address that is not loopback (bridge pods cannot reach the host's
127/8, and the API server's endpoint reconciler refuses it) and that is not the machine's
own network (which would expose the API server): :func:`add_node_address` puts it on an
empty bridge (this kernel knows no ``dummy`` links). Host services the pods use (the
tests' S3 server) listen on it too.

:func:`sweep` removes what the node's components leave when they stop, or when they were
killed: the pod bridge, the node link, ``host-local``'s leases, CNI chains of our network,
and the kubelet's own chains that ``kube-proxy --cleanup`` leaves (``KUBE-FIREWALL`` is
hooked into INPUT/OUTPUT and drops non-loopback sources to 127/8).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from kube_local.cri import configs

KUBELET_CHAINS = ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT")


class NetworkError(RuntimeError):
    """The node's address could not be set up (say, not root)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def add_node_address(node_ip: str) -> None:
    if _ip("link", "show", configs.NODE_LINK, check=False).returncode != 0:
        _ip("link", "add", configs.NODE_LINK, "type", "bridge")
    _ip("addr", "replace", f"{node_ip}/32", "dev", configs.NODE_LINK)
    _ip("link", "set", configs.NODE_LINK, "up")


def _iptables(cmd: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cmd, *args], capture_output=True, text=True, check=False)


def _sweep_cni_chains() -> None:
    marker = f'name: \\"{configs.CNI_NETWORK}\\"'
    for table in ("nat", "filter"):
        rules = _iptables("iptables", "-t", table, "-S").stdout.splitlines()
        for rule in rules:
            if rule.startswith("-A ") and marker in rule:  # printed with shell quoting
                _iptables("iptables", "-t", table, "-D", *shlex.split(rule)[1:])
        for line in rules:
            if line.startswith("-N CNI-"):
                chain = line.split()[1]
                body = _iptables("iptables", "-t", table, "-S", chain).stdout
                if marker in body:
                    _iptables("iptables", "-t", table, "-F", chain)
                    _iptables("iptables", "-t", table, "-X", chain)


def _sweep_kubelet_chains() -> None:
    for cmd in ("iptables", "ip6tables"):
        for hook in ("INPUT", "OUTPUT"):
            while _iptables(cmd, "-D", hook, "-j", "KUBE-FIREWALL").returncode == 0:
                pass
        for table in ("filter", "nat", "mangle"):
            for chain in KUBELET_CHAINS:
                if _iptables(cmd, "-t", table, "-F", chain).returncode == 0:
                    _iptables(cmd, "-t", table, "-X", chain)


def unmount_under(folder: Path) -> None:
    """Lazily unmount everything below ``folder`` (sandbox shm, overlay roots, volumes),
    deepest first."""
    prefix = str(folder.resolve()) + "/"
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(prefix)), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def sweep(layout: configs.Layout) -> None:
    _ip("link", "del", configs.POD_BRIDGE, check=False)
    _ip("link", "del", configs.NODE_LINK, check=False)
    shutil.rmtree(layout.path("cni-ipam"), ignore_errors=True)
    _sweep_cni_chains()
    _sweep_kubelet_chains()
