"""decide() and the model are pure: importing them pulls in no kopf and no kubernetes."""

from __future__ import annotations

import subprocess
import sys

PURE = [
    "cjob_operator.admission",
    "cjob_operator.decide",
    "cjob_operator.decide.lifecycle",
    "cjob_operator.decide.running",
    "cjob_operator.decide.health",
    "cjob_operator.status",
    "cjob_operator.decide.rollback",
    "cjob_operator.decide.savepoints",
    "cjob_operator.ledger",
    "cjob_operator.rollout",
    "cjob_operator.manifests",
    "cjob_operator.manifests.config",
    "cjob_operator.manifests.pods",
    "cjob_operator.validate",
    "cjob_operator.model.spec",
    "cjob_operator.model.status",
    "cjob_operator.model.observation",
    "cjob_operator.model.savepoints",
    "cjob_operator.model.acks",
]


def test_pure_modules_import_no_kopf_no_kubernetes_no_io_clients() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in PURE)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'kopf', 'kubernetes', 'aiohttp', 'minio', 'prometheus_client'})\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_whole_operator_imports_no_spark_and_no_data_plane_libraries() -> None:
    """The operator image installs no pyspark; the running operator (every handler and
    what it reaches) must not need pyspark, py4j, pyarrow or numpy either."""
    code = (
        "import sys\n"
        "import cjob_operator.main, cjob_operator.reconcile, cjob_operator.act.perform\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'pyspark', 'py4j', 'pyarrow', 'numpy'})\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
