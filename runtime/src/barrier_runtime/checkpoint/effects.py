"""Side effects the coordinator decides under its lock and runs after releasing it.

Calling a task gateway or the failover callback while holding the
coordinator's lock could deadlock with a task thread that is waiting for that
lock to deliver an acknowledgement. So state changes append what must be told
to the world to an :class:`Effects`, and the coordinator runs it once the
lock is released. A failing notification is logged and does not stop the
others: the coordinator's state is already settled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from barrier_runtime.checkpoint import protocols
from barrier_runtime.core import metadata, types

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class Effects:
    """Notifications collected under the lock, in the order they were decided."""

    aborted: list[tuple[types.CheckpointId, types.FailureReason]] = field(default_factory=list)
    failover: str | None = None
    """The failover message, when counted failures just exceeded the tolerated number."""

    def run(self, gateway: protocols.TaskGateway, on_failover: Callable[[str], None]) -> None:
        """Send abort notifications, then ask for a failover if one was decided."""
        for checkpoint_id, reason in self.aborted:
            try:
                gateway.notify_aborted(checkpoint_id, reason)
            except Exception:
                _log.exception(
                    "could not notify the tasks that checkpoint %d was aborted", checkpoint_id
                )
        self.aborted.clear()
        message, self.failover = self.failover, None
        if message is not None:
            _log.error("job failover requested: %s", message)
            try:
                on_failover(message)
            except Exception:
                _log.exception("the failover callback failed")

    @staticmethod
    def run_notify_complete(
        gateway: protocols.TaskGateway, committed: metadata.CheckpointMetadata
    ) -> None:
        try:
            gateway.notify_complete(committed)
        except Exception:
            _log.exception(
                "could not notify the tasks that checkpoint %d completed "
                "(sinks commit on the next completion or on restore)",
                committed.checkpoint_id,
            )
