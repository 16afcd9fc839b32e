"""The JetStream source: partitions by subject filter, positions by stream sequence.

See :mod:`barrier_runtime.connectors.nats` for the contract.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources
from barrier_runtime.connectors import _loop, _nats_client, _payloads, errors

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.js import JetStreamContext

log = logging.getLogger(__name__)

Payload = _payloads.Payload
_IDLE_CHECK_EVERY = 20  # empty fetches between checks that our consumer still exists


class NatsSource(sources.Source):
    """A JetStream stream as a replayable source; see :mod:`barrier_runtime.connectors.nats`."""

    def __init__(
        self,
        servers: str | Sequence[str],
        stream: str,
        *,
        subjects: Sequence[str] | None = None,
        bounded: bool = False,
        batch_size: int = 500,
        poll_timeout: float = 0.1,
        payload: Payload = "json",
        include_metadata: bool = False,
        on_error: _payloads.OnError = "fail",
        request_timeout: float = 10.0,
        connect_options: Mapping[str, Any] | None = None,
    ) -> None:
        if batch_size < 1 or poll_timeout <= 0:
            raise ValueError("batch_size and poll_timeout must be positive")
        if subjects is not None and len(set(subjects)) != len(subjects):
            raise ValueError(f"subjects must be distinct, got {list(subjects)}")
        self.servers = _nats_client.server_list(servers)
        self.stream = stream
        self.subjects = None if subjects is None else tuple(subjects)
        self.bounded = bounded
        self.batch_size = batch_size
        self.poll_timeout = poll_timeout
        self.payload: Payload = payload
        self.include_metadata = include_metadata
        self.on_error = on_error
        self.request_timeout = request_timeout
        self.connect_options = dict(connect_options or {})

    def partitions(self) -> Sequence[str]:
        return [self.stream] if self.subjects is None else list(self.subjects)

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        if partition not in self.partitions():
            raise errors.ConnectorError(
                f"NATS source on stream {self.stream!r} has no partition {partition!r} "
                f"(partitions: {', '.join(self.partitions())})"
            )
        subject = None if self.subjects is None else partition
        return NatsPartition(self, subject, int(resume_from or 0))


class NatsPartition(sources.SourcePartition):
    """One subject filter (or the whole stream) read by a pull consumer in a helper thread."""

    def __init__(self, source: NatsSource, subject: str | None, position: int) -> None:
        self._src = source
        self._subject = subject
        self.position = position
        self.skipped = 0
        self._end: int | None = None
        self._finished = False
        self._idle = 0
        self._received = 0
        self._client: Client | None = None
        self._js: JetStreamContext | None = None
        self._sub: JetStreamContext.PullSubscription | None = None
        self._consumer: str | None = None
        self._loop = _loop.LoopThread(f"nats-{source.stream}-{subject or '*'}")
        try:
            self._call(self._open())
        except BaseException:
            self.close()
            raise

    def where(self) -> str:
        filt = "" if self._subject is None else f" subject {self._subject!r}"
        return f"NATS stream {self._src.stream!r}{filt}"

    def _call(self, coro: Any) -> Any:
        nats = _nats_client.import_nats()
        try:
            return self._loop.run(coro, self._src.request_timeout + self._src.poll_timeout)
        except _loop.LoopTimeoutError as exc:
            raise errors.BrokerUnavailableError(f"{self.where()}: {exc}") from exc
        except (nats.errors.Error, TimeoutError) as exc:
            raise errors.BrokerUnavailableError(
                f"{self.where()}: {type(exc).__name__}: {exc}"
            ) from exc

    async def _open(self) -> None:
        nats = _nats_client.import_nats()
        self._client = await _nats_client.connect(
            self._src.servers, self._src.connect_options, "cjob-source"
        )
        self._js = self._client.jetstream(timeout=self._src.request_timeout)
        try:
            info = await self._js.stream_info(self._src.stream)
        except nats.js.errors.NotFoundError:
            raise errors.ConnectorError(
                f"{self.where()} does not exist: create it first (see ensure_stream)"
            ) from None
        if self._src.bounded:
            self._end = info.state.last_seq
            self._finished = self.position >= self._end
        if info.state.first_seq > self.position + 1 and info.state.messages:
            log.warning(
                "%s: resuming after sequence %d but the stream starts at %d: %d message(s) "
                "were removed by the stream's retention and are skipped",
                self.where(),
                self.position,
                info.state.first_seq,
                info.state.first_seq - self.position - 1,
            )
        await self._create_consumer()

    async def _create_consumer(self) -> None:
        nats = _nats_client.import_nats()
        assert self._js is not None and self._client is not None
        api = nats.js.api
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self.position + 1,
            ack_policy=api.AckPolicy.NONE,
            filter_subject=self._subject,
            inactive_threshold=300.0,
            mem_storage=True,
            num_replicas=1,
        )
        info = await self._js.add_consumer(self._src.stream, config=config)
        self._consumer = info.name
        self._received = 0  # consumer sequence of the last message that reached us
        if self._sub is not None:
            await self._sub.unsubscribe()
        self._sub = await self._js.pull_subscribe_bind(consumer=info.name, stream=self._src.stream)

    def next_batch(self) -> Sequence[batch_mod.Record] | None:
        if self._finished:
            return None
        result: list[batch_mod.Record] | None = self._call(self._fetch())
        return result

    async def _fetch(self) -> list[batch_mod.Record] | None:
        assert self._sub is not None
        try:
            msgs = await self._sub.fetch(self._src.batch_size, timeout=self._src.poll_timeout)
        except TimeoutError:  # nats.errors.TimeoutError or a bare asyncio one: nothing arrived
            msgs = []
        if not msgs:
            return await self._idle_check()
        self._idle = 0
        rows: list[batch_mod.Record] = []
        for msg in msgs:
            seq = msg.metadata.sequence.stream
            self._received = max(self._received, msg.metadata.sequence.consumer)
            if seq <= self.position:
                continue  # a redelivery after a consumer reset
            if self._end is not None and seq > self._end:
                self._finished = True
                break
            self.position = seq
            row = self._decode(msg, seq)
            if row is not None:
                rows.append(row)
        if self._end is not None and self.position >= self._end:
            self._finished = True
        if self._finished and not rows:
            return None
        return rows

    async def _idle_check(self) -> list[batch_mod.Record] | None:
        """After nothing arrived: is a bounded read done; is our consumer still there?"""
        nats = _nats_client.import_nats()
        assert self._js is not None and self._consumer is not None
        self._idle += 1
        if self._end is None and self._idle % _IDLE_CHECK_EVERY:
            return []
        try:
            info = await self._js.consumer_info(self._src.stream, self._consumer)
        except nats.js.errors.NotFoundError:
            log.info("%s: consumer vanished (server restart?); recreating it", self.where())
            await self._create_consumer()
            return []
        drained = info.num_pending == 0 and info.delivered.consumer_seq <= self._received
        if self._end is not None and drained:
            self._finished = True
            return None
        return []

    def _decode(self, msg: Msg, seq: int) -> batch_mod.Record | None:
        try:
            row = _payloads.record_of(msg.data, self._src.payload)
        except _payloads.NotJsonError as exc:
            return self._malformed(msg.subject, seq, str(exc))
        if self._src.include_metadata:
            row = {**row, "_subject": msg.subject, "_seq": seq}
        return row

    def _malformed(self, subject: str, seq: int, problem: str) -> batch_mod.Record | None:
        where = f"malformed message in {self.where()} at sequence {seq} ({subject}): {problem}"
        _payloads.reject(where, self._src.on_error)
        self.skipped += 1
        return None

    def snapshot(self) -> sources.Position:
        return self.position

    def close(self) -> None:
        self._loop.close(self._shutdown())

    async def _shutdown(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        if self._js is not None and self._consumer is not None:
            try:
                await self._js.delete_consumer(self._src.stream, self._consumer)
            except Exception as exc:  # best effort: it expires after inactive_threshold anyway
                log.debug("%s: could not delete consumer: %s", self.where(), exc)
        await client.close()
