"""The layers hold: the import-linter contracts pass, and would catch a wrong import.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); the test
command also runs ``lint-imports`` directly. Here they are checked against the
tree as it is, and against a copy with one import that runs back up the layers,
which must break them. A package-level cycle check covers what the layer
contract does not list (sub-packages, the operator).
"""

from __future__ import annotations

import collections
import os
import pathlib
import shutil
import subprocess
import sys

import grimp
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LINT_IMPORTS = pathlib.Path(sys.executable).with_name("lint-imports")


def _lint_imports(runtime_src: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(runtime_src), str(ROOT / "operator" / "src")]),
    }
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def lint_imports() -> pathlib.Path:
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: run ./scripts/test.sh, which installs it")
    return LINT_IMPORTS


def test_the_contracts_hold_on_this_tree(lint_imports: pathlib.Path) -> None:
    done = _lint_imports(ROOT / "runtime" / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "wrong_import", "contract"),
    [
        # the user API reaching into a host
        ("api/steps.py", "from barrier_runtime.spark import session", "never import a host"),
        # the driver reaching into the in-process host
        ("driver/restore.py", "from barrier_runtime.local import runner", "each package imports"),
        # the ground floor importing the layer above it
        ("core/types.py", "from barrier_runtime.storage import errors", "each package imports"),
        # the driver reaching into the task engine instead of the messages on core
        ("driver/restore.py", "from barrier_runtime.task import subtask", "never imports the task"),
        # the commit protocol catching storage's errors instead of its port's own
        (
            "checkpoint/commit.py",
            "from barrier_runtime.storage import errors",
            "never imports storage",
        ),
    ],
)
def test_a_wrong_import_breaks_a_contract(
    lint_imports: pathlib.Path,
    tmp_path: pathlib.Path,
    module: str,
    wrong_import: str,
    contract: str,
) -> None:
    copy = tmp_path / "src"
    shutil.copytree(
        ROOT / "runtime" / "src" / "barrier_runtime",
        copy / "barrier_runtime",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    target = copy / "barrier_runtime" / module
    text = target.read_text()
    head, sep, body = text.partition("from __future__ import annotations\n")
    target.write_text(head + sep + wrong_import + "  # noqa\n" + body)

    done = _lint_imports(copy)

    assert done.returncode != 0, done.stdout
    assert contract in done.stdout.replace("\n", " ")
    assert wrong_import.split()[1] in done.stdout


@pytest.mark.parametrize("root", ["barrier_runtime", "cjob_operator"])
def test_no_import_cycle_between_packages(root: str) -> None:
    graph = grimp.build_graph(root, cache_dir=None)
    depth = root.count(".") + 2

    def package(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    edges: dict[str, set[str]] = collections.defaultdict(set)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = package(module), package(imported)
            if a != b and b.startswith(root + "."):
                edges[a].add(b)
    cycle = _find_cycle(edges)
    assert cycle is None, " -> ".join(cycle or [])


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph ``edges``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(edges):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}}) is None


@pytest.mark.parametrize(
    "package",
    [
        "barrier_runtime.task",
        "barrier_runtime.api",
        "barrier_runtime.storage",
        "barrier_runtime.checkpoint",
        "barrier_runtime.driver",
        "barrier_runtime.spark",
        "cjob_operator",
    ],
)
def test_no_import_cycle_between_the_modules_of_a_package(package: str) -> None:
    """Inside a package, modules import one another one way (imports in functions count)."""
    graph = grimp.build_graph(package.split(".", maxsplit=1)[0], cache_dir=None)
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for module in graph.find_descendants(package) | {package}:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(package + ".") and imported != module:
                edges[module].add(imported)
    cycle = _find_cycle(edges)
    assert cycle is None, " -> ".join(cycle or [])
