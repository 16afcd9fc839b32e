"""Named errors of the barrier handler: a broken input stream, a misbehaving task."""

from __future__ import annotations


class CorruptStreamError(Exception):
    """A channel delivered something the barrier protocol forbids.

    Raised for a repeated or out-of-order barrier on a channel (barrier ids on
    one channel strictly increase, so a second barrier *n* on a blocked channel
    or on a channel that already delivered *n* is corrupt) and for anything
    that arrives on a channel after its end of partition. The task should fail
    with ``FailureReason.CORRUPT_STREAM`` and restart from the last completed
    checkpoint; retrying the same input will not help.
    """


class ChannelBlockedError(RuntimeError):
    """The task handed the handler an event read from a channel the handler had blocked.

    This is a bug in the task executor, not in the input: a blocked channel
    must not be read until ``unblock_all``.
    """
