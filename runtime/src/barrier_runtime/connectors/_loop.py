"""Drive asyncio client libraries from the runtime's synchronous worker threads.

The runtime calls ``next_batch()`` / ``commit()`` from plain threads, while
``nats-py`` is asyncio-only. :class:`LoopThread` owns one event loop running
in a daemon thread; :meth:`LoopThread.run` submits a coroutine and waits for
it with a timeout (thread-safe: any number of threads may submit). The
client's background tasks (reader, pings, flusher) keep running between
calls, so the connection stays healthy while the worker is busy elsewhere.
:meth:`LoopThread.close` runs a last clean-up coroutine, cancels whatever is
left, stops the loop and joins the thread; it is idempotent.

>>> import asyncio
>>> loop = LoopThread("doc")
>>> loop.run(asyncio.sleep(0, result=42), timeout=5)
42
>>> loop.close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopTimeoutError(TimeoutError):
    """A coroutine submitted to :meth:`LoopThread.run` did not finish in time (it was cancelled)."""


class LoopThread:
    """An event loop in its own daemon thread."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._serve, name=f"cjob-asyncio-{name}", daemon=True
        )
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop; :class:`LoopTimeoutError` (after cancelling it) if too slow."""
        with self._lock:
            if self._closed:
                coro.close()
                raise RuntimeError("the connector's event loop is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        done, _ = concurrent.futures.wait([future], timeout)
        if not done:
            future.cancel()
            raise LoopTimeoutError(f"a broker call took longer than {timeout:g}s")
        return future.result()  # the coroutine's own exceptions (timeouts too) pass through

    def close(self, cleanup: Coroutine[Any, Any, Any] | None = None, timeout: float = 5.0) -> None:
        """Run ``cleanup`` (bounded by ``timeout``), cancel leftover tasks, stop and join."""
        with self._lock:
            if self._closed:
                if cleanup is not None:
                    cleanup.close()
                return
            self._closed = True
        if threading.current_thread() is self._thread:
            if cleanup is not None:
                cleanup.close()
            self._loop.call_soon(self._loop.stop)
            return
        if cleanup is not None:
            future = asyncio.run_coroutine_threadsafe(cleanup, self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout)
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_cancel_others(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()


async def _cancel_others() -> None:
    me = asyncio.current_task()
    others = [t for t in asyncio.all_tasks() if t is not me]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
