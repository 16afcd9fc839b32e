"""``python -m kube_local serve --state-dir DIR [--host H] [--port P] [--kubelet [--docker D]]``.

``--kubelet`` runs stored Pods as containers on the local Docker engine
(:mod:`kube_local.node`); without it Pods are stored and never run.

Serves until SIGTERM/SIGINT. Once listening it writes ``DIR/kubeconfig`` (with the
bound port) and then ``DIR/ready`` containing the URL; both are removed on stop.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
from pathlib import Path

import aiohttp.web

from kube_local import pki, server


async def _serve(state: Path, host: str, port: int, history: int, docker: str | None) -> None:
    pki.ensure(state)
    api = server.ApiServer(
        (state / "admin-token").read_text().strip(), (state / "ca.crt").read_text(), history
    )
    runner = aiohttp.web.AppRunner(api.app(), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    site = aiohttp.web.SockSite(runner, sock, ssl_context=pki.server_context(state))
    await site.start()
    url = f"https://{host}:{sock.getsockname()[1]}"
    kubelet = (
        None if docker is None else api.start_kubelet(state, docker, host, sock.getsockname()[1])
    )
    pki.write_kubeconfig(state, url)
    (state / "ready").write_text(url + "\n")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        (state / "ready").unlink(missing_ok=True)
        if kubelet is not None:
            kubelet.detach()
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(prog="kube_local")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the API server in the foreground")
    serve.add_argument("--state-dir", type=Path, required=True)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0)
    serve.add_argument(
        "--history",
        type=int,
        default=1000,
        help="events kept per resource for watches (older: 410 Gone)",
    )
    serve.add_argument(
        "--kubelet", action="store_true", help="run Pods as containers on the local Docker engine"
    )
    serve.add_argument("--docker", default="docker", help="the docker client (with --kubelet)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(
        _serve(
            args.state_dir,
            args.host,
            args.port,
            args.history,
            args.docker if args.kubelet else None,
        )
    )


if __name__ == "__main__":
    main()
