"""The reference pages leave nothing out: every CRD field, every cjob option, every metric.

These checks walk the sources independently of the generator, so a generator that
silently skips something (a new kind of schema node, a parser nested one level
deeper, a metric defined in a new module) fails here rather than going unnoticed.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import docs_gen
from barrier_runtime import cli as cjob_cli
from docs_gen import cli, crd, metrics

ROOT = docs_gen.ROOT
NOT_METRICS = frozenset({"cjob_lock"})
"""``cjob_…`` strings in the shipped code that are not metric names (a kopf memo key)."""
_METRIC_NAME = re.compile(r"^cjob_[a-z0-9_]*[a-z0-9]$")


def _property_paths(path: str, schema: Mapping[str, Any]) -> Iterator[str]:
    yield path
    for name, child in (schema.get("properties") or {}).items():
        yield from _property_paths(f"{path}.{name}", child)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for name, child in (items.get("properties") or {}).items():
            yield from _property_paths(f"{path}[].{name}", child)
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield f"{path}.<key>"


def test_every_crd_field_has_a_section() -> None:
    page = (ROOT / crd.OUTPUT).read_text(encoding="utf-8")
    schema = crd.load(ROOT)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    paths = [p for top in crd.SECTIONS for p in _property_paths(top, schema["properties"][top])]
    assert len(paths) > 100
    missing = [p for p in paths if f"#### {p.replace('<', '&lt;')}\n" not in page]
    assert not missing, f"{crd.OUTPUT} has no section for {missing}"


def test_every_cel_rule_and_message_is_quoted() -> None:
    page = (ROOT / crd.OUTPUT).read_text(encoding="utf-8")
    schema = crd.load(ROOT)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]

    def rules(node: Any) -> Iterator[Mapping[str, Any]]:
        if isinstance(node, Mapping):
            yield from node.get("x-kubernetes-validations") or ()
            for value in node.values():
                yield from rules(value)
        elif isinstance(node, list):
            for value in node:
                yield from rules(value)

    found = list(rules(schema))
    assert len(found) > 20
    for rule in found:
        assert " ".join(rule["rule"].split()) in page
        assert " ".join(rule["message"].split()) in page


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_cjob_command_and_option_is_documented() -> None:
    page = (ROOT / cli.OUTPUT).read_text(encoding="utf-8")
    parsers = list(_parsers(cjob_cli.build_parser()))
    assert len(parsers) >= 9
    for parser in parsers:
        assert f"## {parser.prog}\n" in page
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert flag in page, f"{parser.prog} {flag} is missing from {cli.OUTPUT}"


def test_options_without_help_are_found_and_marked() -> None:
    parser = argparse.ArgumentParser(prog="cjob")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="run it")
    run.add_argument("--fast", action="store_true", help="go fast")
    run.add_argument("--slow", type=float, default=2.0)
    run.add_argument("target")
    assert cli.options_without_help(parser) == ["cjob run --slow", "cjob run target"]
    page = cli.render(parser)
    assert "| `--slow` | `SLOW` (number) | `2.0` | **(no help text)** |" in page
    assert "- `cjob run --slow`" in page.split("## Options without help text")[1]


def test_every_cli_option_has_help() -> None:
    missing = cli.options_without_help()
    assert not missing, "options without a help text: " + ", ".join(missing)


def _metric_like_strings(path: pathlib.Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _METRIC_NAME.match(node.value)
        ):
            yield node.value


def test_every_metric_name_in_the_shipped_code_is_documented() -> None:
    documented = {
        n
        for m in (*metrics.driver(), *metrics.operator())
        for n in (m.family, m.exposed, *m.series_names)
    }
    sources = [*ROOT.glob("runtime/src/**/*.py"), *ROOT.glob("operator/src/**/*.py")]
    undocumented = sorted(
        f"{name} ({path.relative_to(ROOT)})"
        for path in sources
        for name in _metric_like_strings(path)
        if name not in documented and name not in NOT_METRICS
    )
    assert not undocumented, (
        f"metric names that {metrics.OUTPUT} does not list: {undocumented}; if they are "
        "metrics, make docs_gen.metrics read their definitions and run "
        f"{docs_gen.REGENERATE}"
    )


def test_the_driver_metrics_come_from_a_collection_with_every_family() -> None:
    names = {m.exposed for m in metrics.driver()}
    assert {
        "cjob_last_completed_checkpoint_id",
        "cjob_checkpoints_failed_total",
        "cjob_records_in_total",
        "cjob_backpressure_seconds_total",
    } <= names
    failed = next(m for m in metrics.driver() if m.exposed == "cjob_checkpoints_failed_total")
    assert failed.labels == ("job", "namespace", "reason")
