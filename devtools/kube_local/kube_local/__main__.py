"""``python -m kube_local serve --state-dir DIR [--node [--docker D]] [--pod-cidr CIDR]``.

Starts the real control plane (:mod:`kube_local.control_plane`: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler; binaries from ``scripts/kube-build.sh``), creates
the namespaces where the chart claims the ``restricted`` Pod Security Standard holds
(``--restricted``, default ``cjob-system streaming``) with
``pod-security.kubernetes.io/enforce: restricted``, and with ``--node`` runs the node
agent (:mod:`kube_local.node`): pods as containers on the local Docker engine, pod
addresses from ``--pod-cidr`` (default ``$CJOB_KUBE_LOCAL_POD_CIDR`` or 127.1.0.0/16).

Serves until SIGTERM/SIGINT. Once everything answers it writes ``DIR/kubeconfig`` (the
admin's) and then ``DIR/ready`` containing the API server's URL; ``ready`` is removed
on stop, after the node's containers and the control plane are gone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import urllib.request
from pathlib import Path

from kube_local import certs, control_plane
from kube_local.node import api as api_mod
from kube_local.node import kubelet as kubelet_mod
from kube_local.node import status

ROOT = Path(__file__).resolve().parents[3]
RESTRICTED = "pod-security.kubernetes.io/enforce"


def _restricted(plane: control_plane.ControlPlane, names: list[str]) -> None:
    for name in names:
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {RESTRICTED: "restricted"}},
        }
        request = urllib.request.Request(
            f"{plane.url}/api/v1/namespaces",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(request, context=plane.client_context(), timeout=30).close()


def _api(plane: control_plane.ControlPlane, client: certs.Client) -> api_mod.Api:
    plane.authority.client(client)
    pki = plane.authority.path
    return api_mod.Api(
        plane.url, pki("ca.crt"), pki(f"{client.file}.crt"), pki(f"{client.file}.key")
    )


async def _serve(plane: control_plane.ControlPlane, docker: str | None, cidr: str) -> None:
    agent = None
    if docker is not None:
        node = status.NODE
        authority = plane.authority
        agent = kubelet_mod.Kubelet(
            _api(plane, certs.node_client(node)),
            _api(plane, certs.KUBE_PROXY),
            plane.state,
            docker,
            cidr,
            node,
            (authority.path("ca.crt"), *authority.kubelet_serving(node)),
        )
        await agent.start()
    (plane.state / "ready").write_text(plane.url + "\n")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        if agent is not None:
            await agent.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="kube_local")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the control plane (and the node) in the foreground")
    serve.add_argument("--state-dir", type=Path, required=True)
    serve.add_argument("--bin-dir", type=Path, help="default: what scripts/kube-build.sh prints")
    serve.add_argument("--node", action="store_true", help="run pods on the local Docker engine")
    serve.add_argument("--docker", default="docker", help="the docker client (with --node)")
    serve.add_argument("--pod-cidr", default=kubelet_mod.pod_cidr())
    serve.add_argument("--restricted", default="cjob-system streaming")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    state: Path = args.state_dir
    state.mkdir(parents=True, exist_ok=True)
    (state / "ready").unlink(missing_ok=True)
    bin_dir = args.bin_dir or control_plane.build(ROOT)
    plane = control_plane.ControlPlane(state, bin_dir)
    # SIGTERM while starting: stop what started (ControlPlane.start cleans up on errors)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        plane.start()
        (state / "components.pid").write_text(" ".join(map(str, plane.pids())) + "\n")
        _restricted(plane, args.restricted.split())
        asyncio.run(_serve(plane, args.docker if args.node else None, args.pod_cidr))
    except KeyboardInterrupt:
        pass
    finally:
        (state / "ready").unlink(missing_ok=True)
        plane.stop()
        (state / "components.pid").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
