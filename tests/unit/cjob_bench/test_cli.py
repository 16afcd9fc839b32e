"""The benchmark command: what ``list`` shows, how ``run`` turns its shared options into each entry's own."""

from __future__ import annotations

import importlib
import json
import pathlib

import pytest
from cjob_bench import cli


def test_list_names_every_workload_and_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["list"])
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names[:7] == ["W1", "W2", "W3", "W3v", "W4", "W4-kafka", "W5"]
    assert {"startup", "recovery", "simultaneous", "backpressure"} <= set(names)


@pytest.mark.parametrize("entry", cli.ENTRIES, ids=lambda e: e.name)
def test_every_entry_is_a_module_with_a_main(entry: cli.Entry) -> None:
    assert callable(importlib.import_module(entry.module).main)


@pytest.mark.parametrize(
    ("name", "peers", "expected"),
    [
        ("W2", ["spark", "bytewax"], ["--peers", "spark,bytewax"]),
        ("W2", [], ["--peers", ""]),
        ("W4", ["spark"], []),
        ("W4", [], ["--skip-spark-ss", "--skip-real-time"]),
        ("W4-kafka", [], ["--systems", "ours-aligned,ours-unaligned"]),
        (
            "W4-kafka",
            ["spark"],
            ["--systems", "ours-aligned,ours-unaligned,spark-real-time,spark-micro-batch"],
        ),
        ("W5", [], ["--systems", "ours"]),
        ("W5", ["spark"], ["--systems", "ours,spark_ss,spark_ss_unthrottled"]),
    ],
)
def test_peers_become_each_entrys_own_options(
    name: str, peers: list[str], expected: list[str]
) -> None:
    assert cli.entry_args(cli.find(name), [], peers=peers, repeats=None) == expected


def test_other_options_pass_through_before_the_shared_ones() -> None:
    args = cli.entry_args(cli.find("w5"), ["--events", "100"], peers=None, repeats=2)
    assert args == ["--events", "100", "--repeats", "2"]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "W9"],
        ["run", "W1", "--peers", "bytewax"],  # W1 has no Bytewax flow
        ["run", "unaligned", "--repeats", "3"],
        ["run", "W1,W5"],  # only the file suite's workloads and W4 share a session
    ],
)
def test_a_wrong_name_or_option_exits_2_with_one_sentence(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ")


def test_workloads_of_one_session_take_the_peers_of_any_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr("cjob_bench.workloads.suite_cli.main", lambda argv: seen.append(argv) or {})
    cli.main(["run", "W1,W2,W4", "--peers", "spark,bytewax", "--long"])
    assert seen == [["--only", "W1,W2,W4", "--long", "--peers", "spark,bytewax"]]


def test_nexmark_generates_events_and_runs_queries_checked_against_the_oracle(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "events")
    made = cli.main(["nexmark", "generate", "--out", data, "--events", "5000", "--generators", "2"])
    assert made["rows"] == {"persons": 100, "auctions": 300, "bids": 4600}
    ran = cli.main(["nexmark", "local", "--data", data, "--queries", "q2,q12", "--check"])
    assert [(r["query"], r["equal"]) for r in ran] == [("q2", True), ("q12", True)]
    printed, decoder, docs = capsys.readouterr().out, json.JSONDecoder(), []
    at = 0
    while at < len(printed.rstrip()):
        doc, at = decoder.raw_decode(printed, at)
        docs.append(doc)
        at += 1  # the newline after each document
    assert docs == [made, ran]  # one JSON document per command on stdout
