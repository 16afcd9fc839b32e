"""Cluster DNS as one hosts file that every container mounts at ``/etc/hosts``.

Names, as a cluster's DNS would answer them:

* the API server: ``kubernetes``, ``kubernetes.default``, ``kubernetes.default.svc``
  and ``….cluster.local``;
* every running pod: its name (its hostname);
* every Service with a selector: ``<svc>.<ns>.svc.cluster.local``, ``<svc>.<ns>.svc``
  and ``<svc>.<ns>``, one line per ready-or-running matching pod (headless semantics;
  a ClusterIP Service resolves to its pods too: there is no proxy, so its ``port``
  must equal the ``targetPort``);
* a Service without a selector: the addresses of its EndpointSlices (how Kubernetes
  names a server it does not run); an ``ExternalName`` Service whose ``externalName``
  is an IP address: that address (the real API server refuses loopback addresses in
  EndpointSlices, so this names a server on this machine's loopback).

Pods are the node's own (every pod runs on this one node); Services and EndpointSlices
come from the API server as ``system:kube-proxy`` reads them.

The file is rewritten in place (same inode), because Docker bind-mounts it by inode.
"""

from __future__ import annotations

import contextlib
import ipaddress
import pathlib
import socket
from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]
API_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


def _matches(selector: dict[str, str], pod: Obj) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _service_names(service: Obj) -> str:
    name, ns = service["metadata"]["name"], service["metadata"]["namespace"]
    return f"{name}.{ns}.svc.cluster.local {name}.{ns}.svc {name}.{ns}"


def render(
    api_host: str, pods: Iterable[Obj], services: Iterable[Obj], slices: Iterable[Obj]
) -> str:
    live = [
        p
        for p in pods
        if (p.get("status") or {}).get("podIP")
        and (p.get("status") or {}).get("phase") in ("Pending", "Running")
        and not p["metadata"].get("deletionTimestamp")
    ]
    # Host networking shares the machine's hostname: it must resolve too (the JVM asks).
    lines = [f"127.0.0.1 localhost {socket.gethostname()}", f"{api_host} {' '.join(API_NAMES)}"]
    lines += [f"{p['status']['podIP']} {p['metadata']['name']}" for p in live]
    by_service: dict[tuple[str, str], list[str]] = {}
    for s in slices:
        owner = (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name", "")
        addresses = by_service.setdefault((s["metadata"]["namespace"], owner), [])
        for endpoint in s.get("endpoints") or ():
            addresses += endpoint.get("addresses") or ()
    for service in services:
        spec = service.get("spec") or {}
        selector = spec.get("selector")
        names = _service_names(service)
        if spec.get("type") == "ExternalName":
            with contextlib.suppress(ValueError):
                lines.append(f"{ipaddress.ip_address(spec.get('externalName', ''))} {names}")
        elif selector:
            ns = service["metadata"]["namespace"]
            lines += [
                f"{p['status']['podIP']} {names}"
                for p in live
                if p["metadata"]["namespace"] == ns and _matches(selector, p)
            ]
        else:
            key = (service["metadata"]["namespace"], service["metadata"]["name"])
            lines += [f"{a} {names}" for a in by_service.get(key, ())]
    return "\n".join(lines) + "\n"


def write_in_place(path: pathlib.Path, text: str) -> None:
    """Replace the content of ``path`` without replacing the file (bind mounts keep it)."""
    if not path.exists():
        path.write_text(text)
        return
    with path.open("r+") as f:
        if f.read() == text:
            return
        f.seek(0)
        f.write(text)
        f.truncate()
