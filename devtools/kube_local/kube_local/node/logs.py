"""The node's log endpoint: ``GET /containerLogs/{namespace}/{pod}/{container}`` over TLS,
as the API server calls a kubelet for ``kubectl logs``.

It serves with a certificate of the plane's CA (for 127.0.0.1, the Node's only address)
and accepts only clients whose certificate that CA signed (the API server presents its
``--kubelet-client-certificate``). Query: ``tailLines``, ``follow``, ``previous``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp.web

if TYPE_CHECKING:
    from kube_local.node.kubelet import Kubelet


async def serve(
    kubelet: Kubelet, ca: Path, cert: Path, key: Path
) -> tuple[aiohttp.web.AppRunner, int]:
    """Start serving on 127.0.0.1 (a free port); returns the runner and the port."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    context.verify_mode = ssl.CERT_REQUIRED

    async def container_logs(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        info = request.match_info
        worker = kubelet.worker_of(info["namespace"], info["pod"])
        name = info["container"]
        if worker is None:
            raise aiohttp.web.HTTPNotFound(text=f"pod {info['namespace']}/{info['pod']} not here")
        previous = request.query.get("previous") in ("true", "1")
        docker_name = (
            worker.exited.get(name)
            if previous
            else worker.running.get(name) or worker.exited.get(name)
        )
        if docker_name is None:
            raise aiohttp.web.HTTPBadRequest(
                text=f'container "{name}" in pod "{info["pod"]}" is waiting to start'
            )
        args = ["logs"]
        if "tailLines" in request.query:
            args += ["--tail", request.query["tailLines"]]
        follow = request.query.get("follow") in ("true", "1")
        if follow:
            args.append("--follow")
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        process = await asyncio.create_subprocess_exec(
            kubelet.engine.docker,
            *args,
            docker_name,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert process.stdout is not None
        try:
            while chunk := await process.stdout.read(65536):
                await response.write(chunk)
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
        await response.write_eof()
        return response

    app = aiohttp.web.Application()
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs)
    runner = aiohttp.web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    await aiohttp.web.SockSite(runner, sock, ssl_context=context).start()
    return runner, int(sock.getsockname()[1])
