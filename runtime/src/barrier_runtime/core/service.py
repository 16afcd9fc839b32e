"""A thing that is started and stopped, and used as ``with thing:`` in between.

The runtime's local servers (the control API, the embedded S3 server, the
embedded brokers) and the CLI's progress view share one life cycle:
``start()`` returns the started object, ``stop()`` is idempotent, and a
``with`` block starts on entry and stops on exit, whatever happened inside.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self


class Service(abc.ABC):
    """Started by :meth:`start`, stopped by :meth:`stop`; ``with`` does both."""

    @abc.abstractmethod
    def start(self) -> Self:
        """Start and return ``self`` once ready; raise a named error if it cannot start."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop and release everything; stopping a stopped service does nothing."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
