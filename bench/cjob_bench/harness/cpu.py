"""CPU time of a whole job, from ``/proc``: every process it starts, by kind.

A command (``cjob run …``) is started under a small reaper,
``python -m cjob_bench.harness.cpu --notify-fd N -- COMMAND…`` (:func:`main`),
that makes itself the *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
a descendant whose parent dies first is re-parented to the reaper, not to
init, and waited for by it. :class:`TreeAccount` samples the tree every
``period`` seconds (0.1 s) and charges each process (keyed by pid and start
time) its last sampled ``utime + stime``, to the kind of the program it runs
at that sample (``exec`` changes it).

What a process uses after its last sample, or a process that lives less than
a period, is not lost when its parent waits for it: Linux adds a waited-for
child's times (its own and its waited-for children's) to the parent's
``cutime + cstime``, so the growth of the nearest live ancestor's, minus what
was already charged for the processes that vanished under it, is charged to
their kind. A parent that ignores SIGCHLD (PySpark's daemon does, for the
Python workers it forks) has its children reaped by the kernel and their times
added to no one: for those only the last sample counts, and
:attr:`TreeAccount.unseen_bound` adds up, per such process, the time between
its last sample and the sample that found it gone (at most one core each:
the CPU time that can have gone uncounted). The reaper, once the command has
exited and every descendant was waited for, tells :class:`JobCpu` on the
notify pipe and waits, alive, until its ``cutime + cstime`` was read; the
books balance exactly (:attr:`JobCpuResult.gap_ticks` is 0): charged =
waited-for by the reaper + the last samples of the processes whose times
reached no one.

Kinds: ``driver`` (the command and what it starts outside the JVM, e.g. the
``spark-submit`` shell), ``jvm`` (every ``java`` process: Spark's, and the
launcher's), ``workers`` (every process under a JVM: PySpark's daemon and the
Python workers it forks). The S3 server (``weed``) is not in the tree: its
share is the growth of its own and its children's CPU time over the run
(:func:`process_ticks`); it serves only the measured job. Times are in clock
ticks of ``os.sysconf('SC_CLK_TCK')``. A sample is not atomic: a process
waited for while ``/proc`` is being read can move its last ticks from one
kind to another (signed corrections follow at the next sample), never out
of the total.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

CLK_TCK = os.sysconf("SC_CLK_TCK")
PR_SET_CHILD_SUBREAPER = 36
HARNESS, DRIVER, JVM, WORKERS, S3_SERVER = "harness", "driver", "jvm", "workers", "s3_server"
UNATTRIBUTED = "unattributed"


class CpuAccountingError(RuntimeError):
    """The job's CPU time could not be accounted for; the message says why."""


@dataclasses.dataclass(frozen=True, slots=True)
class Stat:
    """The fields of ``/proc/<pid>/stat`` this module uses (times in clock ticks)."""

    pid: int
    ppid: int
    comm: str
    start: int
    own: int
    """``utime + stime``: the process's own CPU time, every thread."""
    reaped: int
    """``cutime + cstime``: the CPU time of the children it waited for (recursively)."""


def read_stat(pid: int) -> Stat | None:
    """``/proc/<pid>/stat``, or ``None`` when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            raw = stream.read().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    f = raw[raw.rindex(")") + 2 :].split()
    # fields after comm: state=0 ppid=1 ... utime=11 stime=12 cutime=13 cstime=14 starttime=19
    return Stat(pid, int(f[1]), comm, int(f[19]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14]))


def snapshot() -> dict[int, Stat]:
    """Every process's :class:`Stat`."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                stats[stat.pid] = stat
    return stats


def process_ticks(pid: int) -> int:
    """Own + waited-for CPU ticks of ``pid`` and of its live descendants (0 when gone)."""
    stats = snapshot()
    tree = _descendants(stats, pid)
    return sum(stats[p].own + stats[p].reaped for p in tree)


def _descendants(stats: dict[int, Stat], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for s in stats.values():
        children.setdefault(s.ppid, []).append(s.pid)
    found, todo = set(), [root] if root in stats else []
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def _ignores_sigchld(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as stream:
            for line in stream:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGCHLD - 1) & 1)
    except (FileNotFoundError, ProcessLookupError):
        pass
    return False


def child_kind(parent_kind: str, comm: str) -> str:
    """The kind of a process, from its name and its parent's kind."""
    if comm == "java":
        return JVM
    if parent_kind in (JVM, WORKERS):
        return WORKERS
    return DRIVER if parent_kind == HARNESS else parent_kind


@dataclasses.dataclass(slots=True)
class _Entry:
    kind: str
    comm: str
    ppid: int
    own: int
    reaped: int
    seen: float = 0.0
    ignores_children: bool = False
    """SIGCHLD ignored: its children are reaped by the kernel, their times reach no one."""


class TreeAccount:
    """Samples of the process tree under ``root`` (the reaper), charged by kind."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.by_kind: dict[str, int] = {}
        self._alive: dict[tuple[int, int], _Entry] = {}
        self.samples = 0
        self.unreached = 0
        """Ticks charged to processes whose times reached no live ancestor (see above)."""
        self.unseen_bound = 0.0
        """Seconds: at most this much CPU (one core each) of processes whose parent ignored
        SIGCHLD went unsampled between their last sample and their exit."""

    def sample(self) -> None:
        now = time.monotonic()
        stats = snapshot()
        tree = _descendants(stats, self.root)
        current = {(p, stats[p].start): stats[p] for p in tree}
        by_pid = {key[0]: key for key in current}
        known = {key[0]: key for key in self._alive}
        gone = {key: e for key, e in self._alive.items() if key not in current}
        previous = {key: (e.own, e.reaped) for key, e in self._alive.items()}
        for key in sorted(current, key=lambda k: (current[k].start, k[0])):
            s = current[key]
            entry = self._alive.get(key)
            if entry is None or (entry.comm != s.comm and entry.kind != HARNESS):
                # new, or exec'd another program (``spark-class`` becomes ``java``)
                parent = self._alive.get(by_pid.get(s.ppid, (-1, -1)))
                above = parent.kind if parent else HARNESS
                kind = HARNESS if s.pid == self.root else child_kind(above, s.comm)
                if entry is None:
                    entry = self._alive[key] = _Entry(kind, s.comm, s.ppid, 0, 0)
                entry.kind, entry.comm = kind, s.comm
            self._charge(entry.kind, s.own - entry.own)
            entry.ppid, entry.own, entry.reaped, entry.seen = s.ppid, s.own, s.reaped, now
        for pid in {s.ppid for s in current.values()} & set(by_pid):
            self._alive[by_pid[pid]].ignores_children = _ignores_sigchld(pid)
        # Whatever a vanished process used after its last sample reached its nearest live
        # ancestor's cutime + cstime: the ancestor's gain minus what was already charged.
        charged: dict[tuple[int, int], int] = {}
        kinds: dict[tuple[int, int], set[str]] = {}
        for e in gone.values():
            ancestor, reached = self._live_ancestor(e.ppid, gone, known, current)
            if ancestor is not None and reached:
                charged[ancestor] = charged.get(ancestor, 0) + e.own + e.reaped
                kinds.setdefault(ancestor, set()).add(e.kind)
            elif not reached:
                self.unreached += e.own + e.reaped
                self.unseen_bound += now - e.seen
        for key in gone:
            del self._alive[key]
        for key, entry in self._alive.items():
            gain = entry.reaped - previous.get(key, (0, 0))[1]
            rest = gain - charged.get(key, 0)
            if rest:
                seen = kinds.get(key, set())
                unseen = child_kind(entry.kind, "")
                kind = seen.pop() if len(seen) == 1 else (unseen if not seen else UNATTRIBUTED)
                self._charge(kind, rest)
        self.samples += 1

    def _live_ancestor(
        self,
        ppid: int,
        gone: dict[tuple[int, int], _Entry],
        known: dict[int, tuple[int, int]],
        current: dict[tuple[int, int], Stat],
    ) -> tuple[tuple[int, int] | None, bool]:
        """The nearest live ancestor, and whether the times reach it (no parent on the
        way ignored SIGCHLD)."""
        reached = True
        for _ in range(len(gone) + 1):
            key = known.get(ppid)
            if key is None:
                return None, reached
            reached = reached and not self._alive[key].ignores_children
            if key in current:
                return key, reached
            ppid = gone[key].ppid
        return None, reached

    def _charge(self, kind: str, ticks: int) -> None:
        if ticks:
            self.by_kind[kind] = self.by_kind.get(kind, 0) + ticks

    def total(self) -> int:
        """Every tick charged to a kind of the job (the harness's own time excluded)."""
        return sum(t for k, t in self.by_kind.items() if k != HARNESS)


@dataclasses.dataclass(frozen=True, slots=True)
class JobCpuResult:
    returncode: int
    wall_seconds: float
    cpu_seconds: float
    """Every kind's (the harness's excluded)."""
    by_kind: dict[str, float]
    samples: int
    stdout: str
    waited_for_seconds: float
    """The reaper's ``cutime + cstime`` at the end: the processes whose times reached it."""
    unseen_bound_seconds: float
    """At most this much CPU went uncounted (see :class:`TreeAccount`)."""
    gap_ticks: int
    """Charged - (waited for + charged to processes whose times reached no one): 0."""


class JobCpu:
    """Runs ``command`` under the reaper and accounts its CPU time (:func:`measure`)."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str], period: float = 0.1):
        self.command, self.env, self.period = list(command), env, period

    def run(self, stdout_path: str, timeout: float = 3600.0) -> JobCpuResult:
        read_fd, write_fd = os.pipe()
        argv = [sys.executable, "-m", "cjob_bench.harness.cpu", "--notify-fd", str(write_fd)]
        started = time.perf_counter()
        with open(stdout_path, "w+") as out, open(stdout_path + ".stderr", "w") as err:
            reaper = subprocess.Popen(
                [*argv, "--", *self.command],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=self.env,
                pass_fds=(write_fd,),
            )
            os.close(write_fd)
            account = TreeAccount(reaper.pid)
            try:
                returncode, wall = self._follow(account, read_fd, started, timeout)
                account.sample()  # the reaper alive, every descendant waited for
                final = read_stat(reaper.pid)
            finally:
                os.close(read_fd)
                if reaper.stdin is not None:
                    reaper.stdin.close()
                try:
                    reaper.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    reaper.kill()
                    reaper.wait()
            out.seek(0)
            text = out.read()
        if final is None:
            raise CpuAccountingError("the reaper exited before its CPU time was read")
        kinds = {k: t / CLK_TCK for k, t in account.by_kind.items() if k != HARNESS}
        return JobCpuResult(
            returncode,
            wall,
            account.total() / CLK_TCK,
            kinds,
            account.samples,
            text,
            waited_for_seconds=final.reaped / CLK_TCK,
            unseen_bound_seconds=account.unseen_bound,
            gap_ticks=account.total() - final.reaped - account.unreached,
        )

    def _follow(
        self, account: TreeAccount, fd: int, started: float, timeout: float
    ) -> tuple[int, float]:
        while True:
            account.sample()
            ready, _, _ = select.select([fd], [], [], self.period)
            if ready:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = os.read(fd, 64)
                    if not chunk:
                        raise CpuAccountingError("the reaper exited without reporting")
                    data += chunk
                return int(data), time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                raise CpuAccountingError(f"the job ran longer than {timeout:g} s")


def _reap(command: list[str], notify_fd: int, grace: float) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise CpuAccountingError("prctl(PR_SET_CHILD_SUBREAPER) failed")
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    returncode: int | None = None
    deadline: float | None = None
    while True:
        try:
            pid, status, _ = os.wait4(-1, os.WNOHANG if deadline else 0)
        except ChildProcessError:
            break
        if pid == child.pid:
            returncode = os.waitstatus_to_exitcode(status)
            child.returncode = returncode
            deadline = time.monotonic() + grace
        elif pid == 0:
            if deadline is not None and time.monotonic() > deadline:
                for stray in _descendants(snapshot(), os.getpid()) - {os.getpid()}:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(stray, signal.SIGKILL)
            time.sleep(0.02)
    os.write(notify_fd, f"{returncode if returncode is not None else -1}\n".encode())
    sys.stdin.read()  # stay alive (with our cutime/cstime) until the parent has read them


def main(argv: Sequence[str] | None = None) -> int:
    """The reaper: run COMMAND, wait for every descendant, report, wait for stdin's end."""
    parser = argparse.ArgumentParser(prog="python -m cjob_bench.harness.cpu")
    parser.add_argument("--notify-fd", type=int, required=True)
    parser.add_argument("--grace", type=float, default=30.0, help="then strays are killed")
    parser.add_argument("command", nargs="+")
    ns = parser.parse_args(argv)
    _reap(ns.command, ns.notify_fd, ns.grace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
