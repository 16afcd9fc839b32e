"""``python -m cjob_bench nexmark kafka-latency`` end to end on a real Kafka broker, at a tiny rate.

First, without a broker: the feed sends, generator by generator, exactly the rows the
Parquet files of the same config hold. Then the run:

Nexmark q1 at 400 events/s for 6 s (P = 2, exactly-once aligned checkpoints every second, on
real local Spark): the feed writes the events live, our job reads them with the Kafka source
and commits its results with the transactional Kafka sink, the ``read_committed`` watch reads
them. Every bid produced must be in the committed output exactly once and equal to the
oracle's row for it (the same events, regenerated); the lag series, the latency figures and
the profile of where the latency goes must be there and sane — never how fast anything is.
"""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bench_runs import run_bench
from cjob_bench.nexmark import files, generator, reference
from cjob_bench.nexmark.kafka import feed, method
from nexmark_kafka_runs import (
    RATE,
    SECONDS,
    P,
    check_every_bid_committed_once,
    check_lag_and_latency,
)

pytestmark = [pytest.mark.s3, pytest.mark.timeout(300)]


def test_the_feed_sends_the_rows_of_the_files_of_its_config(tmp_path: pathlib.Path) -> None:
    cfg = feed.live_config(RATE, SECONDS, P)
    files.write(cfg, tmp_path, chunk=500)
    sent: dict[str, list[list[object]]] = {kind: [[] for _ in range(P)] for kind in files.KINDS}
    for chunk in feed.schedule(cfg):
        for g, kind, value, _ in chunk:
            sent[feed.KIND_NAMES[kind]][g].append(json.loads(value))
    for kind in files.KINDS:
        for g in range(P):
            path = tmp_path / kind / f"gen-{g:04d}.parquet"
            assert sent[kind][g] == pq.read_table(path).to_pylist(), (kind, g)


def test_q1_on_kafka_commits_every_bid_once_and_times_it(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("confluent_kafka")
    args = ["nexmark", "kafka-latency", "--query", "q1", "--rate", str(RATE)]
    args += ["--seconds", str(SECONDS), "--partitions", str(P), "--drain", "60"]
    args += ["--keep-rows", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "q1.json")]
    args += ["--profile"]
    done = run_bench(args, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    run = doc["run"]
    bids = check_every_bid_committed_once(run)
    assert run["system_figures"]["checkpoints_completed"] >= 1, run["system_figures"]
    latency = check_lag_and_latency(run, bids)
    visible, to_sink = latency["visible_ms"], latency["sink_before_commit_ms"]
    assert to_sink["p50"] < visible["p50"], latency  # ours: visible only after the commit
    # the profile cuts each record's path into parts that add up to its latency
    cut = run["profile"]
    assert cut["records_matched"] >= 0.9 * latency["measured"], cut
    parts = cut["parts"]
    assert list(parts) == ["to_sink", "wait_for_trigger", "checkpoint", "notify", "commit", "fetch"]
    assert all(part["p50"] >= 0 for part in parts.values()), parts
    assert parts["commit"]["p50"] > 0 and parts["checkpoint"]["p50"] > 0, parts
    assert abs(cut["total"]["p50"] - visible["p50"]) < 0.1 * visible["p50"], (cut, latency)


def test_trials_that_give_up_stop_their_feed_and_commit_what_was_sent(
    tmp_path: pathlib.Path,
) -> None:
    """Two trials on one broker and SparkSession. ``--give-up-lag -1`` gives up at the
    warm-up's end (3 s of a 9 s run) whatever the lag: the feed stops early, the drain is
    skipped, and the output committed is exactly q1 over the bids sent before the stop, each
    once. Then a rate no feed on this machine can send (5 M events/s): the feed stops as soon
    as it is more than the method's slack behind its schedule, and that trial names the feed
    as the limit."""
    pytest.importorskip("pyspark")
    pytest.importorskip("confluent_kafka")
    seconds, too_fast = 9, 5_000_000
    args = ["nexmark", "kafka-sustain", "--query", "q1", "--rates", f"{RATE},{too_fast}"]
    args += ["--seconds", str(seconds), "--partitions", str(P), "--give-up-lag", "-1"]
    args += ["--keep-rows", "--work", str(tmp_path / "work")]
    done = run_bench(args, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    trial, behind = doc["trials"]
    assert 3 <= trial["gave_up_at"] < seconds - 1, trial["lag_series"]
    fed = trial["feed"]
    assert fed["stopped_early"] is True and 0 < fed["events"] < RATE * seconds, fed
    assert fed["fell_behind_at"] is None, fed
    cfg = feed.live_config(RATE, seconds, P)
    sent = [e[0] for chunk in feed.schedule(cfg) for e in chunk][: fed["events"]]
    bids = pa.concat_tables(  # each generator's first events: the feed sends in this order
        generator.generate(cfg, g, 0, sent.count(g)).bids for g in range(P)
    )
    assert bids.num_rows == fed["by_kind"]["bids"] > 0
    rows = [json.loads(line) for line in pathlib.Path(trial["rows_file"]).read_text().splitlines()]
    want = reference.expected("q1", {"bids": bids})
    assert reference.same("q1", rows, want) == (True, f"{bids.num_rows} rows equal")
    assert trial["verdict"]["checks"]["every_output_committed"] is True, trial["verdict"]
    assert trial["verdict"]["gave_up_at"] == trial["gave_up_at"]
    # the rate the feed could not send
    fed = behind["feed"]
    assert fed["fell_behind_at"] is not None and fed["fell_behind_at"] < seconds, fed
    assert 0 < fed["events"] < too_fast * seconds // 10, fed
    assert fed["max_behind_schedule_ms"] > method.FEED_SLACK_MS, fed
    checks = behind["verdict"]["checks"]
    assert checks["feed_kept_schedule"] is False and behind["verdict"]["sustained"] is False
    assert method.searched([behind], 0.1)["limited_by_feed"] is True
