"""The user surface: dataflows, streams, the source and sink contracts, value types for state."""

from barrier_runtime.api.batch import Batch, Record
from barrier_runtime.api.building import InvalidDataflowError
from barrier_runtime.api.dataflow import Dataflow
from barrier_runtime.api.sinks import Sink, SinkWriter
from barrier_runtime.api.sources import Source, SourcePartition
from barrier_runtime.api.streams import KeyedStream, Stream
from barrier_runtime.core.values import register_value_type

__all__ = [
    "Batch",
    "Dataflow",
    "InvalidDataflowError",
    "KeyedStream",
    "Record",
    "Sink",
    "SinkWriter",
    "Source",
    "SourcePartition",
    "Stream",
    "register_value_type",
]
