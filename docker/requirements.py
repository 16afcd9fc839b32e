"""Print the requirements pyproject.toml declares for the project and some extras.

    python3 requirements.py PYPROJECT [EXTRA[,EXTRA...]]

One requirement per line, for ``pip install --requirement``. The Dockerfile installs
them in a layer keyed on pyproject.toml alone, so that a source change does not
download the dependencies again. Extras that name the project itself are skipped.
"""

from __future__ import annotations

import sys
import tomllib


def requirements(pyproject: str, extras: list[str]) -> list[str]:
    with open(pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"requirements.py: {pyproject} has no extra {', '.join(unknown)}")
    reqs = list(project.get("dependencies", []))
    reqs += [r for e in extras for r in optional[e]]
    return [r for r in reqs if not r.startswith(project["name"])]


if __name__ == "__main__":
    extras = [e for e in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if e]
    print("\n".join(requirements(sys.argv[1], extras)))
