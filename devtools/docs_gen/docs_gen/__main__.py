"""``python -m docs_gen [--check] [--root DIR]``: write (or only check) the reference pages."""

from __future__ import annotations

import argparse
import pathlib
import sys

import docs_gen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gen-docs", description="Regenerate docs/reference/ from the code and the CRD."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 naming the pages that are out of date",
    )
    parser.add_argument(
        "--root",
        type=pathlib.Path,
        default=docs_gen.ROOT,
        help="repository root (default: the one this generator is in)",
    )
    args = parser.parse_args(argv)
    root: pathlib.Path = args.root
    if args.check:
        outdated = docs_gen.stale(root)
        for path in outdated:
            print(f"out of date: {path} (run {docs_gen.REGENERATE})", file=sys.stderr)
        return 1 if outdated else 0
    for path, text in docs_gen.generate_all(root).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        old = target.read_text(encoding="utf-8") if target.is_file() else None
        if old != text:
            target.write_text(text, encoding="utf-8")
        print(f"{'unchanged' if old == text else 'wrote':>9} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
