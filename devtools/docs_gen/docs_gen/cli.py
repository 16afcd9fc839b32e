"""``docs/reference/cli.md`` from the argparse parser of ``cjob`` (``barrier_runtime.cli``).

The parser is walked, not its ``--help`` output (whose line wrapping depends on
the terminal and the Python version): every command and subcommand, found
through its ``_SubParsersAction``, with every argument's flags, value, default,
choices and help. Arguments without a help text are marked in their table and
listed again at the end of the page (:func:`options_without_help`).
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from barrier_runtime import cli
from barrier_runtime.cli import failures
from docs_gen import markdown as md

OUTPUT = pathlib.Path("docs/reference/cli.md")
NO_HELP = "**(no help text)**"

_TYPES = {int: "integer", float: "number", str: "text"}


@dataclass(frozen=True, slots=True)
class Command:
    """One (sub)command: its words after ``cjob``, its parser and its one-line help."""

    words: tuple[str, ...]
    parser: argparse.ArgumentParser
    summary: str | None

    @property
    def name(self) -> str:
        return " ".join(("cjob", *self.words))


def commands(parser: argparse.ArgumentParser | None = None) -> list[Command]:
    """``cjob`` and every subcommand below it, depth first, in definition order."""
    return list(_walk(parser or cli.build_parser(), (), None))


def _walk(
    parser: argparse.ArgumentParser, words: tuple[str, ...], summary: str | None
) -> Iterator[Command]:
    yield Command(words, parser, summary)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield from _walk(child, (*words, name), helps.get(name))


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a user gives (no ``--help``, no subcommand selector)."""
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]


def subcommand_selector(parser: argparse.ArgumentParser) -> argparse.Action | None:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return found[0] if found else None


def options_without_help(parser: argparse.ArgumentParser | None = None) -> list[str]:
    """``cjob run --checkpoint-interval``-style names of every argument with no help text."""
    return [
        f"{command.name} {label(action)}"
        for command in commands(parser)
        for action in arguments(command.parser)
        if not (action.help or "").strip()
    ]


def label(action: argparse.Action) -> str:
    """``-p/--parallelism`` for options, ``PIPELINE``/``[ARG ...]`` for positionals."""
    if action.option_strings:
        return "/".join(action.option_strings)
    return shape(action)


def value_name(action: argparse.Action) -> str:
    metavar = action.metavar
    if isinstance(metavar, tuple):
        return " ".join(metavar)
    if metavar is not None:
        return str(metavar)
    return action.dest.upper() if action.option_strings else action.dest


def takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def shape(action: argparse.Action) -> str:
    """``SECONDS``, ``[ARG ...]``: how the value is written on the command line."""
    name = value_name(action)
    shapes = {"*": f"[{name} ...]", "+": f"{name} [{name} ...]", "?": f"[{name}]"}
    return shapes.get(str(action.nargs), name)


def is_required(action: argparse.Action) -> bool:
    """Required options, and positionals that need a value (not ``?`` or ``*``)."""
    if action.option_strings:
        return bool(action.required)
    return str(action.nargs) not in ("?", "*")


def value(action: argparse.Action) -> str:
    """The value column: ``SECONDS`` (number), ``KEY=VALUE`` (repeatable), (flag)."""
    if not takes_value(action):
        return "(flag)"
    kind = _TYPES.get(action.type) if isinstance(action.type, type) else None
    shown = md.code(shape(action)) if action.option_strings else ""
    extra = [
        k
        for k in (
            kind if kind != "text" else None,
            "repeatable" if isinstance(action, argparse._AppendAction) else None,
        )
        if k
    ]
    return " ".join([shown, *(f"({k})" for k in extra)]).strip()


def default(action: argparse.Action) -> str:
    if is_required(action):
        return "required"
    found = action.default
    if found is None or found is argparse.SUPPRESS or found == [] or found is False:
        return ""
    return md.code(str(found))


def choices(action: argparse.Action) -> list[str]:
    if action.choices is None:
        return []
    return ["choices: " + ", ".join(md.code(str(c)) for c in action.choices)]


def help_text(action: argparse.Action, prog: str) -> str:
    """The help with argparse's ``%(default)s``-style fields filled in, as ``--help`` shows."""
    raw = (action.help or "").strip()
    if not raw or raw is argparse.SUPPRESS:
        return NO_HELP
    params: dict[str, Any] = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(c) for c in params["choices"])
    return md.text(raw % params)


def synopsis(command: Command) -> str:
    parts = [command.name]
    optional = False
    for action in arguments(command.parser):
        if action.option_strings and action.required:
            shown = action.option_strings[-1]
            parts.append(f"{shown} {value_name(action)}" if takes_value(action) else shown)
        elif action.option_strings:
            optional = True
    if optional:
        parts.append("[OPTIONS]")
    parts += [shape(a) for a in arguments(command.parser) if not a.option_strings]
    selector = subcommand_selector(command.parser)
    if selector is not None:
        parts.append(value_name(selector) + " ...")
    return " ".join(parts)


def section(command: Command) -> list[str]:
    parser = command.parser
    lines = [f"## {command.name}", "", md.code(synopsis(command)), ""]
    if command.summary:
        lines += [md.text(command.summary[0].upper() + command.summary[1:]) + ".", ""]
    if parser.description and parser.description != command.summary:
        lines += [md.text(parser.description), ""]
    rows = []
    for action in arguments(parser):
        rows.append(
            (
                md.cell(md.code(label(action))),
                md.cell(value(action)),
                md.cell(default(action)),
                md.cell("; ".join([help_text(action, parser.prog), *choices(action)])),
            )
        )
    if rows:
        lines += [*md.table(("argument", "value", "default", "description"), rows), ""]
    selector = subcommand_selector(parser)
    if selector is not None:
        depth = len(command.words) + 1
        subs = [c for c in _walk(parser, command.words, None) if len(c.words) == depth]
        subrows = [
            (
                f"[{md.code(sub.words[-1])}](#{md.slug(sub.name)})",
                md.cell(md.text(sub.summary or "")) or NO_HELP,
            )
            for sub in subs
        ]
        lines += [*md.table(("command", "what it does"), subrows), ""]
    return lines


def render(parser: argparse.ArgumentParser | None = None) -> str:
    found = commands(parser)
    lines = [
        *md.banner("barrier_runtime.cli.build_parser()"),
        "",
        "# `cjob` command line reference",
        "",
        "Every command and option below is read from the parser itself "
        "(`barrier_runtime.cli.build_parser()`), so `cjob … --help` says the same. "
        f"Exit codes: 0 success; {failures.EXIT_FAILED} a job that failed, an internal "
        "error, or `checkpoints verify` finding a problem; "
        f"{failures.EXIT_MISTAKE} a mistake in the command line, its input or the "
        f"environment (one sentence on stderr); {failures.EXIT_INTERRUPTED} interrupted.",
        "",
        "Commands: " + ", ".join(f"[{md.code(c.name)}](#{md.slug(c.name)})" for c in found) + ".",
        "",
    ]
    for command in found:
        lines += section(command)
    missing = options_without_help(parser)
    lines += ["## Options without help text", ""]
    if missing:
        lines += ["These options have no help text yet (`cjob … --help` shows them bare):", ""]
        lines += [f"- {md.code(name)}" for name in missing]
    else:
        lines += ["None: every option has a help text."]
    return md.document(lines)


def generate(root: pathlib.Path) -> str:
    """The page for the parser of the installed ``barrier_runtime.cli`` (``root`` unused)."""
    del root
    return render()
