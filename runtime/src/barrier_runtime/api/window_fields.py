"""What an event-time step reads and writes: its event time, and its named aggregates.

Event time is declared once, at the source (``timestamps=`` with
``watermarks=``), and carried by the stream: an event-time step without
``timestamps=`` reads each record's time the way its sources declared it
(:func:`carried_timestamps`). A step may still give its own ``timestamps=``
(a column a step in between computed, say).

Named aggregates (``aggregate={"clicks": count(), "spend": sum_of("v")}``) give
one result field each, next to the key (in a field named after the key column)
and the window's bounds; :func:`vectorised` turns them into the fields
``window_agg`` computes on whole Arrow batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from barrier_runtime.api import building, event_time
from barrier_runtime.api import steps as defs
from barrier_runtime.api import windows as windows_mod

RESERVED = ("window_start", "window_end", "update")
"""Fields every window result has besides its key and its aggregates."""


def carried_timestamps(
    flow: building.StepGraph, upstream: str, step_id: str, given: event_time.Timestamps | None
) -> event_time.Timestamps:
    """``given``, or else the timestamps every source upstream of ``upstream`` declared."""
    if given is not None:
        return given
    declared: list[event_time.Timestamps | None] = []
    pending, seen = [upstream], set()
    while pending:
        step = flow.step(pending.pop())
        if step.step_id in seen:
            continue
        seen.add(step.step_id)
        if isinstance(step, defs.SourceStep):
            declared.append(step.timestamps)
        pending.extend(i.step_id for i in defs.step_inputs(step))
    if any(d is None for d in declared):
        raise building.InvalidDataflowError(
            f"step {step_id!r}: a source upstream declares no event time; give it "
            "timestamps= and watermarks=, or give this step timestamps="
        )
    if any(d != declared[0] for d in declared):
        raise building.InvalidDataflowError(
            f"step {step_id!r}: the sources upstream declare different timestamps; "
            "give this step timestamps="
        )
    return cast("event_time.Timestamps", declared[0])


def check_names(step_id: str, names: list[str], key_field: str) -> None:
    """Result fields must be non-empty strings, none the key's or a window field."""
    for name in names:
        if not isinstance(name, str) or not name:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: aggregate names must be non-empty strings, got {name!r}"
            )
        if name in (key_field, *RESERVED):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: aggregate name {name!r} is a field every result already "
                f"has ({', '.join((key_field, *RESERVED))}); choose another"
            )


def named(
    step_id: str, aggregate: Mapping[str, windows_mod.AggregateFunction[Any]], key_field: str
) -> windows_mod.Aggregates:
    """Several named aggregates as one, folded record by record (``window``)."""
    if not aggregate:
        raise building.InvalidDataflowError(
            f"step {step_id!r}: aggregate= names no aggregate; give at least one"
        )
    check_names(step_id, list(aggregate), key_field)
    for name, agg in aggregate.items():
        if not isinstance(agg, windows_mod.AggregateFunction):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: aggregate {name!r} is a {type(agg).__name__}, not an "
                "AggregateFunction (count(), sum_of('v'), ... or your own)"
            )
    return windows_mod.Aggregates(aggregate)


def vectorised(
    step_id: str, aggregate: Mapping[str, windows_mod.AggregateFunction[Any]], key_field: str
) -> tuple[defs.WindowAggregate, ...]:
    """Built-in named aggregates as the fields ``window_agg`` computes on whole batches."""
    named(step_id, aggregate, key_field)  # the same checks
    fields = []
    for name, agg in aggregate.items():
        kind = windows_mod.builtin_kind(agg)
        if kind is None or kind[0] not in defs.WINDOW_HOWS:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: window_agg computes the built-in aggregates (count, "
                f"sum_of, min_of, max_of, mean_of); {name!r} is not one: use window"
            )
        fields.append(defs.WindowAggregate(name, kind[0], kind[1]))
    return tuple(fields)
