"""``python -m kube_local serve --state-dir DIR [--node none|kubelet] ...``,
``python -m kube_local load --state-dir DIR IMAGE...``, ``check`` and ``sweep``.

``serve`` starts the real control plane (:mod:`kube_local.control_plane`: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler; binaries from
``scripts/kube-build.sh``), creates the namespaces where the chart claims the
``restricted`` Pod Security Standard holds (``--restricted``, default ``cjob-system
streaming``) with ``pod-security.kubernetes.io/enforce: restricted``, and with
``--node kubelet`` a real node (:mod:`kube_local.cri`): the kubelet on containerd, with
kube-proxy and CoreDNS, on the node address ``--node-ip`` (default
``$CJOB_KUBE_LOCAL_NODE_IP`` or 10.250.0.1), where the API server then serves too; pod
addresses from ``--pod-cidr`` (default ``$CJOB_KUBE_LOCAL_POD_CIDR`` or 10.244.0.0/24).
Root only; one per machine. Without a node the API server serves on 127.0.0.1 (what
the operator tests use: envtest has no node either).

Serves until SIGTERM/SIGINT. Once everything answers it writes ``DIR/kubeconfig`` (the
admin's), ``DIR/node-kind`` and then ``DIR/ready`` containing the API server's URL;
``ready`` is removed on stop, after the node's pods and the control plane are gone.

``load`` imports images from the Docker engine into the node's containerd (what ``kind
load docker-image`` does for kind); ``check`` says why a real node cannot run here;
``sweep`` cleans up after a node whose serving process was killed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import urllib.request
from pathlib import Path

from kube_local import control_plane
from kube_local.cri import configs, network
from kube_local.cri import images as cri_images
from kube_local.cri import node as cri_node

ROOT = Path(__file__).resolve().parents[3]
RESTRICTED = "pod-security.kubernetes.io/enforce"
NODE_IP = "10.250.0.1"
POD_CIDR = "10.244.0.0/24"


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


def _serve_until_stopped(plane: control_plane.ControlPlane, node_kind: str) -> None:
    """Announce readiness, then wait for SIGTERM/SIGINT."""
    (plane.state / "node-kind").write_text(node_kind + "\n")
    (plane.state / "ready").write_text(plane.url + "\n")
    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    stopped.wait()


def _node_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--node",
        choices=("none", "kubelet"),
        default="none",
        help="kubelet: a real kubelet on containerd with kube-proxy and CoreDNS (root)",
    )
    parser.add_argument("--node-ip", default=os.environ.get("CJOB_KUBE_LOCAL_NODE_IP", NODE_IP))
    parser.add_argument("--pod-cidr", default=os.environ.get("CJOB_KUBE_LOCAL_POD_CIDR", POD_CIDR))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kube_local")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the control plane (and the node) in the foreground")
    serve.add_argument("--state-dir", type=Path, required=True)
    serve.add_argument("--bin-dir", type=Path, help="default: what scripts/kube-build.sh prints")
    serve.add_argument("--restricted", default="cjob-system streaming")
    _node_args(serve)
    load = sub.add_parser("load", help="import Docker images into the real node's containerd")
    load.add_argument("--state-dir", type=Path, required=True)
    load.add_argument("--docker", default="docker")
    load.add_argument("images", nargs="+")
    sub.add_parser("check", help="say why a real node cannot run here (exit 1), if it cannot")
    sweep = sub.add_parser("sweep", help="clean up after a real node whose server was killed")
    sweep.add_argument("--state-dir", type=Path, required=True)
    sweep.add_argument("--bin-dir", type=Path, required=True)
    return parser


def _check() -> None:
    why = cri_node.missing_requirements()
    if why:
        raise SystemExit("a real node cannot run here: " + "; ".join(why))


def _sweep(state: Path, bin_dir: Path) -> None:
    leftover = cri_node.CriNode(state, bin_dir, "", "")
    try:
        leftover.take_lock()
    except cri_node.NodeUnavailable as exc:
        raise SystemExit(f"kube_local sweep: {exc}") from None
    leftover.stop()


def _load(state: Path, docker: str, names: list[str]) -> None:
    socket = configs.socket_of(state)
    if not socket.exists():
        raise SystemExit(f"kube_local load: no real node runs in {state}")
    try:
        cri_images.import_from_docker(socket, names, docker)
    except cri_images.ImageImportError as exc:
        raise SystemExit(f"kube_local load: {exc}") from None


def _run_serve(args: argparse.Namespace) -> None:
    state: Path = args.state_dir
    state.mkdir(parents=True, exist_ok=True)
    (state / "ready").unlink(missing_ok=True)
    bin_dir = args.bin_dir or control_plane.build(ROOT)
    node = None
    if args.node == "kubelet":
        node = cri_node.CriNode(state, bin_dir, args.node_ip, args.pod_cidr)
    node_ip = args.node_ip if node is not None else None
    plane = control_plane.ControlPlane(state, bin_dir, node_ip=node_ip)
    # SIGTERM while starting: stop what started (ControlPlane.start cleans up on errors)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        if node is not None:
            node.claim()
        plane.start()
        if node is not None:
            node.start(plane)
        pids = [*plane.pids(), *(node.pids() if node else [])]
        (state / "components.pid").write_text(" ".join(map(str, pids)) + "\n")
        _restricted(plane, args.restricted.split())
        _serve_until_stopped(plane, args.node)
    except KeyboardInterrupt:
        pass
    except (cri_node.NodeUnavailable, network.NetworkError) as exc:
        raise SystemExit(f"kube_local: {exc}") from None
    finally:
        (state / "ready").unlink(missing_ok=True)
        if node is not None:
            node.stop()
        plane.stop()
        (state / "components.pid").unlink(missing_ok=True)


def main() -> None:
    args = _parser().parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.command == "check":
        _check()
    elif args.command == "sweep":
        _sweep(args.state_dir, args.bin_dir)
    elif args.command == "load":
        _load(args.state_dir, args.docker, args.images)
    else:
        _run_serve(args)


if __name__ == "__main__":
    main()
