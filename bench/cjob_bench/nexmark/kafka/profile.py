"""Where the latency to visible output goes: each measured record's path cut into six parts.

A profile run of ours (``kafka-latency --profile``) logs every sink commit (the checkpoint,
the wall-clock start and end of ``KafkaSink.commit``) and the coordinator's completed
checkpoints (trigger and completion time). Each output record the watch read has its
creation time (the feed's clock), its write time at the sink (``_written_us``) and the time
the ``read_committed`` watch received it. The record was published by the commit that ended
last before the watch got it; that commit names its checkpoint. Its path:

1. ``to_sink``: creation to the sink writer (source poll, the query, the channels);
2. ``wait_for_trigger``: to the trigger of the checkpoint that published it (0 when the
   trigger came first: the record was written while the barrier travelled);
3. ``checkpoint``: trigger (or write) to completion: barriers, alignment, snapshots,
   acknowledgements and the ``_metadata`` commit in the store;
4. ``notify``: completion to the start of the sink's commit (the notification reaching the
   sink's task thread, which finishes the batch in hand first);
5. ``commit``: the sink's commit (producing the epoch's records into a Kafka transaction,
   the commit-log record, ``commit_transaction``);
6. ``fetch``: commit end to the watch (the broker's last stable offset, the fetch).

The parts add up to the latency to visible output. Two commits (one per sink subtask) end
close together; matching on the last one before the watch's time can give a record of one
subtask the other's commit, so the cut between parts 5 and 6 is approximate by a commit's
spread. Reported per part: p50, p99, and the mean over the slowest 1 % of records (what the
p99 is made of).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cjob_bench.nexmark.kafka import method

PARTS = ("to_sink", "wait_for_trigger", "checkpoint", "notify", "commit", "fetch")


def breakdown(raw: dict[str, Any], base_time_ms: int, warmup: float) -> dict[str, Any] | None:
    """The six parts of the measured records' latency, ms (``None``: no timeline)."""
    timeline = raw.get("system_figures", {}).get("timeline")
    if not timeline or not timeline["commits"] or not timeline["checkpoints"]:
        return None
    created, written, visible = _records(raw, base_time_ms, warmup)
    commits = sorted(timeline["commits"], key=lambda c: c["end"])
    ends = np.array([c["end"] for c in commits]) * 1e6
    starts = np.array([c["start"] for c in commits]) * 1e6
    ids = np.array([c["checkpoint"] for c in commits])
    known = {int(k): (t, e) for k, t, e in timeline["checkpoints"] if e is not None}
    which = np.searchsorted(ends, visible, side="right") - 1
    ok = which >= 0
    trigger = np.full(len(visible), np.nan)
    done = np.full(len(visible), np.nan)
    for i in np.flatnonzero(ok):
        times = known.get(int(ids[which[i]]))
        if times is not None:
            trigger[i], done[i] = times[0] * 1e6, times[1] * 1e6
    ok &= ~np.isnan(trigger)
    w, t, e = written[ok], trigger[ok], done[ok]
    cs, ce, v = starts[which[ok]], ends[which[ok]], visible[ok]
    begin = np.maximum(t, w)
    parts = {
        "to_sink": w - created[ok],
        "wait_for_trigger": begin - w,
        "checkpoint": e - begin,
        "notify": cs - e,
        "commit": ce - cs,
        "fetch": v - ce,
    }
    return summarise({k: p / 1000.0 for k, p in parts.items()}, matched=int(ok.sum()))


def _records(
    raw: dict[str, Any], base_time_ms: int, warmup: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Creation, write and visible times (µs) of the records :func:`.method.latency` measures."""
    arrays, clock = raw["arrays"], raw["clock"]
    at = arrays["event_time_ms"] - base_time_ms
    known = (arrays["event_time_ms"] >= 0) & (at >= warmup * 1000) & (at < len(clock))
    created = clock[np.clip(at, 0, len(clock) - 1)].astype(float)
    known &= (created >= 0) & (arrays["written_us"] >= 0)
    return (
        created[known],
        arrays["written_us"][known].astype(float),
        arrays["visible_us"][known].astype(float),
    )


def summarise(parts: dict[str, np.ndarray], *, matched: int) -> dict[str, Any]:
    """Per part p50, p99 and the mean over the slowest 1 % of records (by their sum), ms.

    >>> parts = {"a": np.array([1.0, 1.0, 1.0, 9.0]), "b": np.array([2.0, 2.0, 2.0, 2.0])}
    >>> out = summarise(parts, matched=4)
    >>> out["parts"]["a"]["p50"], out["parts"]["a"]["slowest_1pct_mean"], out["total"]["p50"]
    (1.0, 9.0, 3.0)
    """
    total = sum(parts.values())
    assert isinstance(total, np.ndarray)
    slow = total >= np.quantile(total, 0.99) if len(total) else total.astype(bool)
    out: dict[str, Any] = {"records_matched": matched, "parts": {}}
    for name, values in parts.items():
        figures = method.quantiles(values)
        figures["slowest_1pct_mean"] = round(float(values[slow].mean()), 1) if slow.any() else None
        out["parts"][name] = {k: figures[k] for k in ("p50", "p99", "slowest_1pct_mean")}
    out["total"] = method.quantiles(total)
    return out


def by_window(raw: dict[str, Any], window: float = 10.0) -> list[dict[str, Any]] | None:
    """The checkpoints' and commits' durations per ``window`` s of the feed, ms.

    Window *i* holds what started between ``i * window`` and ``(i + 1) * window`` s after
    the feed's first event (negative: before it): the checkpoints' count, median and
    maximum duration (trigger to completion) and the sink commits' maximum. It says when
    slow checkpoints happen, e.g. only while a component warms up (``None``: no timeline).

    >>> raw = {"feed": {"first_wall": 100.0}, "system_figures": {"timeline": {
    ...     "checkpoints": [[1, 99.0, 99.5], [2, 101.0, 101.1], [3, 112.0, 112.05]],
    ...     "commits": [{"start": 101.2, "end": 102.0}]}}}
    >>> [(w["from_s"], w["checkpoints"], w["checkpoint_max_ms"]) for w in by_window(raw)]
    [(-10.0, 1, 500.0), (0.0, 1, 100.0), (10.0, 1, 50.0)]
    >>> by_window(raw)[1]["commit_max_ms"]
    800.0
    """
    timeline = raw.get("system_figures", {}).get("timeline")
    first = raw.get("feed", {}).get("first_wall")
    if not timeline or first is None:
        return None
    durations: dict[int, list[float]] = {}
    commits: dict[int, list[float]] = {}
    for _, trigger, done in timeline["checkpoints"]:
        if done is not None:
            durations.setdefault(int((trigger - first) // window), []).append(done - trigger)
    for c in timeline["commits"]:
        commits.setdefault(int((c["start"] - first) // window), []).append(c["end"] - c["start"])
    out = []
    for i in sorted(set(durations) | set(commits)):
        took, committed = durations.get(i, []), commits.get(i, [])
        out.append(
            {
                "from_s": i * window,
                "checkpoints": len(took),
                "checkpoint_median_ms": round(float(np.median(took)) * 1000, 1) if took else None,
                "checkpoint_max_ms": round(max(took) * 1000, 1) if took else None,
                "commit_max_ms": round(max(committed) * 1000, 1) if committed else None,
            }
        )
    return out
