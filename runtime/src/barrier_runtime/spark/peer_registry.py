"""The driver's side of the workers' rendezvous: collect every peer address, then hand out the list.

Workers of an attempt must learn each other's ``host:port`` before they can
connect their data channels. The driver already hears from every one of
them (each says ``Hello`` to the coordinator server, signed with the
attempt's key), so the ``Hello`` carries the worker's peer address and the
driver answers with the full list once all P workers registered. That
replaces Spark's ``BarrierTaskContext.allGather``, which costs about a
second whatever the workers do (it polls its answer once a second).

States of one attempt's :class:`PeerRegistry`:

* *collecting*: ``register`` accepts each worker index once
  (:attr:`Registration.ACCEPTED`); the registration that makes the set
  complete returns :attr:`Registration.COMPLETED` — exactly once — and the
  caller then sends :attr:`PeerRegistry.addresses` to every worker;
* *complete*: every worker registered; later registrations are refused.

Refused registrations change nothing: a worker of another attempt
(:attr:`Registration.STALE` — never mixed into this attempt's list), an
index outside ``0..P-1`` (:attr:`Registration.OUT_OF_RANGE`) or an index
registered already (:attr:`Registration.DUPLICATE`).

Timeout: the clock starts at the first registration (Spark gang-schedules the
P tasks of a barrier stage together, so the rest follow within a worker's
start-up time; waiting for the cluster to find slots is not counted).
:meth:`PeerRegistry.overdue` returns one :class:`RendezvousTimeoutError`
naming the missing workers once ``timeout`` seconds passed without the set
completing.

Pure logic with an injected clock; not thread-safe (the attempt's lock
guards it).

>>> from barrier_runtime.core.clock import ManualClock
>>> clock = ManualClock()
>>> peers = PeerRegistry(attempt=3, parallelism=2, timeout=60.0, clock=clock)
>>> peers.register(3, 1, "10.0.0.2:4001")
<Registration.ACCEPTED: 'accepted'>
>>> peers.register(2, 0, "10.0.0.9:4000")  # a worker of attempt 2
<Registration.STALE: 'stale'>
>>> peers.register(3, 0, "10.0.0.1:4000")
<Registration.COMPLETED: 'completed'>
>>> peers.addresses
('10.0.0.1:4000', '10.0.0.2:4001')
"""

from __future__ import annotations

import enum

from barrier_runtime.core import clock as clock_mod


class Registration(enum.Enum):
    ACCEPTED = "accepted"
    COMPLETED = "completed"
    """Accepted, and every worker has now registered: send the addresses."""
    STALE = "stale"
    DUPLICATE = "duplicate"
    OUT_OF_RANGE = "out-of-range"

    @property
    def accepted(self) -> bool:
        return self in (Registration.ACCEPTED, Registration.COMPLETED)


class RendezvousTimeoutError(TimeoutError):
    """Not every worker of the attempt registered with the driver in time."""


class PeerRegistry:
    """The peer addresses of one attempt's P workers; see the module essay."""

    def __init__(
        self, *, attempt: int, parallelism: int, timeout: float, clock: clock_mod.Clock
    ) -> None:
        self.attempt = attempt
        self.parallelism = parallelism
        self.timeout = timeout
        self._clock = clock
        self._addresses: dict[int, str] = {}
        self._first: float | None = None

    def register(self, attempt: int, worker: int, address: str) -> Registration:
        """Record ``worker``'s peer ``address``; see :class:`Registration` for the outcomes."""
        if attempt != self.attempt:
            return Registration.STALE
        if not 0 <= worker < self.parallelism:
            return Registration.OUT_OF_RANGE
        if worker in self._addresses:
            return Registration.DUPLICATE
        if self._first is None:
            self._first = self._clock.now()
        self._addresses[worker] = address
        return Registration.COMPLETED if self.complete else Registration.ACCEPTED

    @property
    def complete(self) -> bool:
        return len(self._addresses) == self.parallelism

    @property
    def addresses(self) -> tuple[str, ...] | None:
        """Every worker's address by index once all registered, else ``None``."""
        if not self.complete:
            return None
        return tuple(self._addresses[i] for i in range(self.parallelism))

    @property
    def missing(self) -> list[int]:
        return [i for i in range(self.parallelism) if i not in self._addresses]

    def overdue(self) -> RendezvousTimeoutError | None:
        """The error to fail the attempt with once the rendezvous took longer than ``timeout``."""
        if self.complete or self._first is None:
            return None
        waited = self._clock.now() - self._first
        if waited < self.timeout:
            return None
        return RendezvousTimeoutError(
            f"worker(s) {self.missing} of attempt {self.attempt} did not register with the "
            f"driver within {self.timeout:g}s of the first one "
            f"({len(self._addresses)} of {self.parallelism} registered): their Spark tasks "
            "did not start or cannot reach the driver's coordinator address"
        )
