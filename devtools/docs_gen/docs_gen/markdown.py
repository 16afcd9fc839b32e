"""Small Markdown helpers shared by the reference generators (pure, deterministic).

>>> code("a`b")
'``a`b``'
>>> cell("one | two\\nthree")
'one \\\\| two three'
>>> slug("spec.env[].valueFrom")
'specenvvaluefrom'
>>> text("sizes *in* <bytes>")
'sizes \\\\*in\\\\* &lt;bytes>'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_SLUG_DROP = re.compile(r"[^\w\- ]")


def code(value: str) -> str:
    """``value`` as an inline code span (longer fences when it contains backticks)."""
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def text(value: str) -> str:
    """Prose from a source (a description, a help text) made safe for Markdown."""
    return " ".join(value.split()).replace("*", "\\*").replace("<", "&lt;")


def cell(value: str) -> str:
    """Text for a table cell: one line, pipes escaped."""
    return " ".join(value.split()).replace("|", "\\|")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    return _SLUG_DROP.sub("", heading.strip().lower()).replace(" ", "-")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table; cells must already be escaped with :func:`cell`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def banner(sources: str) -> list[str]:
    """The comment that opens every generated page: where it comes from, how to remake it."""
    return [
        f"<!-- Generated from {sources} by devtools/docs_gen. Do not edit by hand:",
        "     run scripts/gen-docs.sh after changing the sources; "
        "tests/unit/docs fails when this file drifts. -->",
    ]


def document(lines: list[str]) -> str:
    """Join lines into a page: single blank lines between blocks, one final newline."""
    out: list[str] = []
    for line in lines:
        if line == "" and (not out or out[-1] == ""):
            continue
        out.append(line.rstrip())
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"
