"""Named connector failures. Each message says what broke, where, and what to do."""

from __future__ import annotations

from barrier_runtime import task_failure


class ConnectorError(Exception):
    """A source or sink could not do what was asked."""


class MalformedRecordError(ConnectorError, task_failure.RecordFailure, ValueError):
    """An input record cannot be parsed; the message names the file (or subject) and line.

    Replaying the input meets the same record again: a restart cannot heal it.
    """


class ConnectorDependencyError(ConnectorError, ImportError):
    """An optional client library (``nats-py``, ``confluent-kafka``) is not installed."""


class BrokerUnavailableError(ConnectorError):
    """The message broker cannot be reached or refused a request."""


class TransactionTooLargeError(ConnectorError):
    """A sink transaction holds more records than may travel inline in checkpoint metadata."""


class EmbeddedBrokerError(ConnectorError):
    """An embedded broker (``nats-server``, the Apache Kafka broker) did not start."""
