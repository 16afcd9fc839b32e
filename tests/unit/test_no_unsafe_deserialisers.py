"""No module of either package imports a deserialiser that can run code (issue 12).

Whoever can write to the checkpoint bucket or reach a worker's port must not be
able to run code in a worker or the driver, so nothing the runtime or the
operator reads is unpickled. This test holds the line statically: no module
imports ``pickle`` (or its C twin), ``cloudpickle``, ``dill``, ``marshal`` or
``shelve``, nor names one to ``importlib.import_module``/``__import__``. There is
no allow-list.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = [ROOT / "runtime/src/barrier_runtime", ROOT / "operator/src/cjob_operator"]
FORBIDDEN = {"pickle", "_pickle", "cPickle", "cloudpickle", "dill", "marshal", "shelve"}
MODULES = sorted(p for package in PACKAGES for p in package.rglob("*.py"))


def forbidden_imports(source: str) -> list[str]:
    """``module: line`` for each import of a forbidden module in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in {"import_module", "__import__"} and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        found += [f"{n}: line {node.lineno}" for n in names if n.split(".")[0] in FORBIDDEN]
    return found


def test_the_check_sees_every_form_of_import() -> None:
    source = (
        "import pickle\nimport os, marshal as m\nfrom dill import loads\n"
        "from cloudpickle.cloudpickle import x\nimport importlib\n"
        "importlib.import_module('shelve')\n__import__('_pickle')\nimport json\n"
    )
    assert [f.split(":")[0] for f in forbidden_imports(source)] == [
        "pickle",
        "marshal",
        "dill",
        "dill.loads",
        "cloudpickle.cloudpickle",
        "cloudpickle.cloudpickle.x",
        "shelve",
        "_pickle",
    ]


def test_both_packages_are_scanned() -> None:
    assert len(MODULES) > 100
    assert any(p.name == "values.py" for p in MODULES)
    assert any("cjob_operator" in p.parts for p in MODULES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_an_unsafe_deserialiser(path: pathlib.Path) -> None:
    assert forbidden_imports(path.read_text(encoding="utf-8")) == []
