"""NATS client plumbing shared by the JetStream source and sink (``nats-py`` is imported lazily)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from barrier_runtime.connectors import _loop, errors

if TYPE_CHECKING:
    from nats.aio.client import Client

log = logging.getLogger(__name__)


def import_nats() -> Any:
    try:
        import nats  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError as exc:
        raise errors.ConnectorDependencyError(
            "the NATS connector needs nats-py: pip install 'nats-py>=2.16'"
        ) from exc
    return nats


async def connect(servers: Sequence[str], options: Mapping[str, Any], name: str) -> Client:
    nats = import_nats()

    async def quiet(exc: Exception) -> None:
        log.debug("nats client %s: %s", name, exc)

    try:
        client: Client = await nats.connect(
            servers=list(servers),
            name=name,
            error_cb=quiet,
            **{"connect_timeout": 5, "max_reconnect_attempts": 30, **options},
        )
    except Exception as exc:
        raise errors.BrokerUnavailableError(
            f"cannot connect to NATS at {', '.join(servers)}: {type(exc).__name__}: {exc}"
        ) from exc
    return client


def server_list(servers: str | Sequence[str]) -> tuple[str, ...]:
    return (servers,) if isinstance(servers, str) else tuple(servers)


def ensure_stream(
    servers: str | Sequence[str],
    stream: str,
    subjects: Sequence[str],
    *,
    duplicate_window: float = 600.0,
    connect_options: Mapping[str, Any] | None = None,
) -> None:
    """Create JetStream stream ``stream`` on ``subjects`` (or update it) with a dedup window."""
    nats = import_nats()

    async def run() -> None:
        client = await connect(server_list(servers), connect_options or {}, "cjob-admin")
        try:
            config = nats.js.api.StreamConfig(
                name=stream, subjects=list(subjects), duplicate_window=duplicate_window
            )
            js = client.jetstream()
            try:
                await js.stream_info(stream)
            except nats.js.errors.NotFoundError:
                await js.add_stream(config)
            else:
                await js.update_stream(config)
        finally:
            await client.close()

    loop = _loop.LoopThread("ensure-stream")
    try:
        loop.run(run(), timeout=30)
    finally:
        loop.close()
