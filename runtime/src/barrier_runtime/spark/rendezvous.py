"""The barrier task's early rendezvous: start ``allGather`` before the slow start-up work.

Spark's ``BarrierTaskContext.allGather`` sends its request to the
``BarrierCoordinator`` and then waits in a loop that *sleeps one second*
before it checks whether the answer arrived (``Thread.sleep(1000)`` in
``BarrierTaskContext.runBarrier``, so that it can notice a killed task). So
the rendezvous of an attempt ends about one second after the *first* worker
called ``allGather``, however quickly the others follow (measured on Spark 4
local mode: 0.98 to 1.02 s). That second is spent here, in parallel with the
rest of a worker's start-up, rather than after it:

1. :func:`start` runs first in the task, before the runtime (pyarrow, the
   pipeline, the store) is imported: it binds the worker's peer listener on
   an ephemeral port and calls ``allGather`` with its address on a thread;
2. the worker meanwhile imports the runtime, says ``Hello``, loads and plans
   the pipeline and opens the store, then builds its
   :class:`~barrier_runtime.channels.network.WorkerNetwork` on that listener;
3. its rendezvous step waits for the addresses gathered in step 1.

This module stays import-light (standard library only) so step 1 can happen
before anything heavy is imported.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable

AllGather = Callable[[str], list[str]]


def listen_host(configured: str | None) -> str:
    """The address peers reach this worker at: configured, ``SPARK_LOCAL_IP``, the pod IP."""
    for candidate in (
        configured,
        os.environ.get("SPARK_LOCAL_IP"),
        os.environ.get("SPARK_EXECUTOR_POD_IP"),
        os.environ.get("POD_IP"),
    ):
        if candidate:
            return candidate
    return socket.gethostbyname(socket.gethostname())


def format_address(host: str, port: int) -> str:
    """``host:port`` (IPv6 hosts in brackets), as :mod:`~barrier_runtime.channels.network`."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class EarlyRendezvous:
    """An ``allGather`` of this worker's peer address, started before the worker runs."""

    def __init__(self, all_gather: AllGather, host: str, num_workers: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.create_server(
            (host, 0), family=family, backlog=max(16, 2 * num_workers)
        )
        self.address = format_address(host, self.listener.getsockname()[1])
        self._all_gather = all_gather
        self._done = threading.Event()
        self._addresses: list[str] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._gather, name="cjob-rendezvous", daemon=True)
        self._thread.start()

    def _gather(self) -> None:
        try:
            self._addresses = self._all_gather(self.address)
        except BaseException as exc:  # handed to the worker's rendezvous step
            self._error = exc
        finally:
            self._done.set()

    def all_gather(self, address: str) -> list[str]:
        """The gathered addresses (waits); ``address`` must be the one gathered."""
        if address != self.address:
            raise ValueError(f"the worker listens at {address}, but {self.address} was gathered")
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._addresses is not None
        return self._addresses

    def close(self) -> None:
        """Close the listener if the worker never took it over."""
        self.listener.close()


def start(all_gather: AllGather, configured_host: str | None, num_workers: int) -> EarlyRendezvous:
    """Step 1: listen for peers and start gathering addresses."""
    return EarlyRendezvous(all_gather, listen_host(configured_host), num_workers)
