"""CPU accounting from /proc (cjob_bench.harness.cpu) with real child processes."""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys
import time

import pytest
from cjob_bench.harness import cpu

BENCH = pathlib.Path(cpu.__file__).resolve().parents[2]
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
TICKS = 5 / os.sysconf("SC_CLK_TCK")
"""Slack for /proc's figures against the exact CPU a burn took: they are whole clock ticks
split from the scheduler's runtime, a tick or two short per process (0.38 s for a 0.4 s burn)."""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH), env.get("PYTHONPATH", "")])
    return env


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _run(command: list[str], tmp_path: pathlib.Path, period: float) -> cpu.JobCpuResult:
    done = cpu.JobCpu(command, env=_env(), period=period).run(str(tmp_path / "out.txt"))
    assert done.gap_ticks == 0  # the books balance
    assert sum(done.by_kind.values()) == pytest.approx(done.cpu_seconds)
    return done


def test_a_busy_child_that_exits_between_samples_is_counted(tmp_path: pathlib.Path) -> None:
    child = BURN.format(s=0.5)
    code = (
        f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}])\nprint('ok')\n"
    )
    # One sample before the job, one after: the child lives and dies in between.
    done = _run(_python(code), tmp_path, period=30.0)
    assert done.returncode == 0 and done.stdout == "ok\n"
    assert done.cpu_seconds >= 0.5 - TICKS
    assert done.by_kind[cpu.DRIVER] == pytest.approx(done.cpu_seconds)
    assert done.samples == 2


def test_an_orphan_outliving_its_parent_is_counted(tmp_path: pathlib.Path) -> None:
    orphan = BURN.format(s=0.6)
    code = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {orphan!r}])\n"  # never waited for
    )
    done = _run(_python(code), tmp_path, period=0.05)
    assert done.returncode == 0
    assert done.cpu_seconds >= 0.6 - TICKS
    assert sum(done.by_kind.values()) == pytest.approx(done.cpu_seconds)


def test_processes_under_a_jvm_are_workers(tmp_path: pathlib.Path) -> None:
    java = tmp_path / "bin" / "java"  # a Python named java: its comm is "java"
    java.parent.mkdir()
    java.symlink_to(sys.executable)
    worker = BURN.format(s=0.4)
    jvm = f"import subprocess\n{BURN.format(s=0.3)}subprocess.run([{sys.executable!r}, '-c', {worker!r}])\n"
    driver = (
        f"import subprocess\n{BURN.format(s=0.2)}subprocess.run([{str(java)!r}, '-c', {jvm!r}])\n"
    )
    done = _run(_python(driver), tmp_path, period=0.05)
    assert done.returncode == 0, (tmp_path / "out.txt.stderr").read_text()
    assert done.by_kind[cpu.DRIVER] >= 0.2 - TICKS
    assert done.by_kind[cpu.JVM] >= 0.3 - TICKS
    assert done.by_kind[cpu.WORKERS] >= 0.4 - TICKS
    assert sum(done.by_kind.values()) == pytest.approx(done.cpu_seconds)


def test_a_process_that_execs_a_jvm_is_charged_as_one(tmp_path: pathlib.Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.symlink_to(sys.executable)
    worker = BURN.format(s=0.4)
    jvm = f"import subprocess\nsubprocess.run([{sys.executable!r}, '-c', {worker!r}])\n"
    # like spark-class: a shell that sleeps a little, then becomes java
    shell = f"sleep 0.5; exec {java} -c {shlex.quote(jvm)}"
    done = _run(["sh", "-c", shell], tmp_path, period=0.05)
    assert done.returncode == 0, (tmp_path / "out.txt.stderr").read_text()
    assert done.by_kind[cpu.WORKERS] >= 0.4 - TICKS
    assert done.by_kind.get(cpu.DRIVER, 0.0) < 0.2


def test_children_of_a_parent_ignoring_sigchld_are_counted_from_their_samples(
    tmp_path: pathlib.Path,
) -> None:
    # like PySpark's daemon: SIGCHLD ignored, so the kernel reaps the children and
    # their times reach no one's cutime
    child = BURN.format(s=0.8)
    code = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
        f"p = subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "while p.poll() is None: time.sleep(0.01)\n"
    )
    done = _run(_python(code), tmp_path, period=0.05)
    assert done.returncode == 0, (tmp_path / "out.txt.stderr").read_text()
    assert done.waited_for_seconds < 0.5  # the child's time never reached the reaper
    assert done.cpu_seconds + done.unseen_bound_seconds >= 0.8 - TICKS
    assert done.unseen_bound_seconds < 0.5


def test_the_exit_code_of_the_command_is_returned(tmp_path: pathlib.Path) -> None:
    done = _run(_python("raise SystemExit(3)"), tmp_path, period=0.05)
    assert done.returncode == 3


def test_process_ticks_of_a_live_process() -> None:
    busy = subprocess.Popen(_python(BURN.format(s=0.3) + "import time\ntime.sleep(30)\n"))
    try:
        before = cpu.process_ticks(busy.pid)
        deadline = cpu.CLK_TCK * 0.3
        for _ in range(200):
            if cpu.process_ticks(busy.pid) >= deadline:
                break
            time.sleep(0.05)
        assert cpu.process_ticks(busy.pid) >= deadline > before
    finally:
        busy.kill()
        busy.wait()
    assert cpu.process_ticks(busy.pid) == 0


def test_read_stat_parses_a_name_with_spaces_and_parentheses() -> None:
    stat = cpu.read_stat(os.getpid())
    assert stat is not None and stat.pid == os.getpid() and stat.ppid == os.getppid()
    assert cpu.read_stat(2**22 + 12345) is None


def test_child_kind() -> None:
    assert cpu.child_kind(cpu.HARNESS, "cjob") == cpu.DRIVER
    assert cpu.child_kind(cpu.DRIVER, "bash") == cpu.DRIVER
    assert cpu.child_kind(cpu.DRIVER, "java") == cpu.JVM
    assert cpu.child_kind(cpu.JVM, "python3") == cpu.WORKERS
    assert cpu.child_kind(cpu.WORKERS, "python3") == cpu.WORKERS
