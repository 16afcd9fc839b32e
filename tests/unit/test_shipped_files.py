"""What the wheel ships: the two packages and the public ``barrier_runtime.testing``, no scaffolding.

Both images install the one wheel built from ``runtime/src`` and ``operator/src``
(Dockerfile, stage ``wheel``), so its file list is what a user or an image gets.
The list comes from setuptools' ``build_py``, the build step that decides which
package files a wheel holds (``[tool.setuptools.packages.find]`` and package data
of ``pyproject.toml``), run on a copy of the sources the Dockerfile copies: a full ``pip wheel``
needs a setuptools newer than the test environment's and a network to fetch it.
The copy drops ``project.license``, the one field older setuptools cannot read;
it does not decide any file. (``tests/docker`` checks the installed files inside
the built images as well.)
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "runtime/src", "operator/src")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every file ``build_py`` puts in the wheel, relative to site-packages."""
    tmp = tmp_path_factory.mktemp("wheel")
    source, lib = tmp / "source", tmp / "lib"
    for name in SOURCES:  # what the Dockerfile copies into its wheel stage
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, source / name)
    pyproject = source / "pyproject.toml"
    pyproject.write_text(re.sub(r"(?m)^license = .*$", "", pyproject.read_text()))
    build_py = [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py"]
    subprocess.run(
        [*build_py, "--build-lib", str(lib)],
        cwd=source,
        check=True,
        capture_output=True,
    )
    return sorted(p.relative_to(lib).as_posix() for p in lib.rglob("*") if p.is_file())


def test_the_wheel_holds_both_packages_and_the_public_testing_package(
    shipped: list[str],
) -> None:
    assert {
        "barrier_runtime/py.typed",
        "barrier_runtime/testing/__init__.py",
        "barrier_runtime/spark/driver.py",
        "cjob_operator/py.typed",
        "cjob_operator/main.py",
        # the CRD the operator and `cjob validate` judge every job by (package data)
        "cjob_operator/admission/checkpointedjobs.checkpointed.dev.yaml",
    } <= set(shipped)
    assert {name.split("/", 1)[0] for name in shipped} == {"barrier_runtime", "cjob_operator"}


def test_the_wheel_holds_no_benchmark_probe(shipped: list[str]) -> None:
    assert [name for name in shipped if "probe" in name.split("/")] == []


def test_the_wheel_holds_no_operator_test_doubles(shipped: list[str]) -> None:
    assert [name for name in shipped if name.startswith("cjob_operator/testing")] == []
    doubles = ("fake_driver.py", "kubelet.py", "harness.py", "node.py", "standin_driver.py")
    assert [name for name in shipped if name.endswith(doubles)] == []


def test_the_only_testing_code_in_the_wheel_is_the_public_barrier_runtime_testing(
    shipped: list[str],
) -> None:
    testing = [
        name
        for name in shipped
        if "testing" in name.split("/") or name.endswith(("/testing.py", "_testing.py"))
    ]
    assert testing, "the public barrier_runtime.testing must ship"
    assert [name for name in testing if not name.startswith("barrier_runtime/testing/")] == []
