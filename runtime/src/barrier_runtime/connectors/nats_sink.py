"""The JetStream sink: two-phase commit over ``Nats-Msg-Id`` deduplication.

See :mod:`barrier_runtime.connectors.nats` for the contract.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks
from barrier_runtime.connectors import _loop, _nats_client, _staging, errors

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.js import JetStreamContext

log = logging.getLogger(__name__)


class NatsSink(sinks.Sink):
    """Exactly-once within the dedup window; see :mod:`barrier_runtime.connectors.nats`."""

    def __init__(
        self,
        servers: str | Sequence[str],
        subject: str,
        *,
        stream: str | None = None,
        inline_limit: int = _staging.DEFAULT_INLINE_LIMIT,
        staging_url: str | None = None,
        publish_timeout: float = 60.0,
        min_duplicate_window: float = 120.0,
        connect_options: Mapping[str, Any] | None = None,
    ) -> None:
        if inline_limit < 1:
            raise ValueError("inline_limit must be positive")
        self.servers = _nats_client.server_list(servers)
        self.subject = subject
        self.stream = stream
        self.inline_limit = inline_limit
        self.staging = None if staging_url is None else _staging.Staging(staging_url)
        self.publish_timeout = publish_timeout
        self.min_duplicate_window = min_duplicate_window
        self.connect_options = dict(connect_options or {})
        self._publisher: _Publisher | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_publisher", "_lock")}
        return {**state, "_publisher": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"NATS subject {self.subject!r} at {', '.join(self.servers)}"

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _NatsWriter(self, step_id, subtask)

    def subject_for(self, record: batch_mod.Record) -> str:
        if "{" not in self.subject:
            return self.subject
        try:
            return self.subject.format_map(record)
        except (KeyError, IndexError, ValueError) as exc:
            raise errors.ConnectorError(
                f"cannot build the subject {self.subject!r} for record {record!r}: {exc!r}"
            ) from None

    def commit(self, transaction: sinks.Transaction) -> None:
        txn: _staging.SinkTxn = transaction
        entries = self._entries(txn)
        if entries is None:
            return
        with self._lock:
            if self._publisher is None:
                self._publisher = _Publisher(self)
            publisher = self._publisher
        duplicates = publisher.publish(txn, entries)
        if duplicates:
            log.info(
                "%s: %d message(s) of checkpoint %d were already published (deduplicated)",
                self.describe(),
                duplicates,
                txn["checkpoint"],
            )
        if self.staging is not None and "parts" in txn:
            self.staging.finish(txn)

    def _entries(self, txn: _staging.SinkTxn) -> Iterator[_staging.Entry] | None:
        if "records" in txn:
            return iter(txn["records"])
        if self.staging is None:
            raise errors.ConnectorError(
                f"{self.describe()}: a staged transaction needs the sink's staging_url"
            )
        entries = self.staging.entries(txn)
        if entries is not None:
            return entries
        if self.staging.committed_up_to(txn["step"], txn["subtask"]) >= txn["checkpoint"]:
            return None
        raise self.staging.lost(txn, self.describe())

    def recover(self, step_id: str) -> None:
        if self.staging is not None:
            self.staging.recover(step_id)

    def close(self) -> None:
        """Close the commit connection (it is also closed when the sink is garbage collected)."""
        with self._lock:
            publisher, self._publisher = self._publisher, None
        if publisher is not None:
            publisher.close()


class _Publisher:
    """A sink's connection and event-loop thread, shared by every thread that commits."""

    def __init__(self, sink: NatsSink) -> None:
        self._sink = sink
        self._loop = _loop.LoopThread("nats-sink")
        self._clients: list[Client] = []
        self._checked: set[str] = set()
        self._finalizer = weakref.finalize(self, _release, self._loop, self._clients)

    def close(self) -> None:
        self._finalizer()

    def publish(self, txn: _staging.SinkTxn, entries: Iterator[_staging.Entry]) -> int:
        nats = _nats_client.import_nats()
        try:
            publishing = self._publish(txn, entries)
            duplicates: int = self._loop.run(publishing, self._sink.publish_timeout)
        except (TimeoutError, nats.errors.Error) as exc:
            raise errors.BrokerUnavailableError(
                f"{self._sink.describe()}: {type(exc).__name__}: {exc}"
            ) from exc
        return duplicates

    async def _publish(self, txn: _staging.SinkTxn, entries: Iterator[_staging.Entry]) -> int:
        nats = _nats_client.import_nats()
        if not self._clients or self._clients[-1].is_closed:
            client = await _nats_client.connect(
                self._sink.servers, self._sink.connect_options, "cjob-sink"
            )
            self._clients.append(client)
        js = self._clients[-1].jetstream()
        futures = []
        try:
            for index, (subject, payload) in enumerate(entries):
                await self._check_window(js)
                futures.append(
                    await js.publish_async(
                        subject,
                        payload.encode(),
                        stream=self._sink.stream,
                        headers={"Nats-Msg-Id": _staging.message_id(txn, index)},
                    )
                )
            acks = await asyncio.gather(*futures)
        except (nats.js.errors.NoStreamResponseError, nats.errors.NoRespondersError):
            raise errors.BrokerUnavailableError(
                f"{self._sink.describe()}: no JetStream stream stores this subject; create one "
                "(ensure_stream) before the job runs"
            ) from None
        except nats.js.errors.APIError as exc:
            raise errors.BrokerUnavailableError(f"{self._sink.describe()}: {exc}") from exc
        return sum(1 for ack in acks if ack.duplicate)

    async def _check_window(self, js: JetStreamContext) -> None:
        """Warn once per stream whose duplicate window is shorter than the sink expects."""
        name = self._sink.stream
        if name is None or name in self._checked:
            return
        self._checked.add(name)
        info = await js.stream_info(name)
        window = info.config.duplicate_window or 0.0
        if window < self._sink.min_duplicate_window:
            log.warning(
                "stream %r deduplicates within %.0fs only: a re-commit after a longer outage "
                "may publish duplicates (raise duplicate_window, e.g. with ensure_stream)",
                name,
                window,
            )


def _release(loop: _loop.LoopThread, clients: list[Client]) -> None:
    async def shut() -> None:
        for client in clients:
            if not client.is_closed:
                await client.close()

    loop.close(shut())


class _NatsWriter(sinks.SinkWriter):
    def __init__(self, sink: NatsSink, step_id: str, subtask: int) -> None:
        self._sink = sink
        self._buffer = _staging.TxnBuffer(
            step=step_id,
            subtask=subtask,
            staging=sink.staging,
            inline_limit=sink.inline_limit,
            describe=sink.describe(),
        )

    def write(self, records: Sequence[batch_mod.Record]) -> None:
        self._buffer.add(
            [
                [self._sink.subject_for(r), json.dumps(r, separators=(",", ":"), default=str)]
                for r in records
            ]
        )

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        return self._buffer.cut(checkpoint_id)
