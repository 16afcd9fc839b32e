"""Running a benchmark the way a user does: ``python -m cjob_bench``, a subprocess, JSON on stdout."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_bench(args: list[str], timeout: float = 280) -> subprocess.CompletedProcess[str]:
    """``python -m cjob_bench ARGS``, the runtime and ``bench/`` on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "runtime" / "src"), str(ROOT / "bench"), env.get("PYTHONPATH", "")]
    )
    return subprocess.run(
        [sys.executable, "-m", "cjob_bench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
