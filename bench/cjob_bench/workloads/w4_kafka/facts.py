"""Machine facts and component versions recorded with every W4-on-Kafka result."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import platform
import subprocess
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[4]
FETCH_SCRIPT = ROOT / "scripts" / "spark-kafka-fetch.sh"


def spark_kafka_libs() -> pathlib.Path:
    """The connector jars: ``$CJOB_SPARK_KAFKA_LIBS``, else what the fetch script prints."""
    if override := os.environ.get("CJOB_SPARK_KAFKA_LIBS"):
        return pathlib.Path(override)
    done = subprocess.run(
        ["bash", str(FETCH_SCRIPT)], capture_output=True, text=True, check=False, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{FETCH_SCRIPT.name} failed ({done.returncode}): {done.stderr.strip()[-500:]}"
        )
    return pathlib.Path(done.stdout.strip().splitlines()[-1])


def machine() -> dict[str, Any]:
    cpu = ""
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg": list(os.getloadavg()),
    }


def versions(broker_version: str | None, libs: pathlib.Path) -> dict[str, Any]:
    import confluent_kafka  # noqa: PLC0415
    import pyspark  # noqa: PLC0415

    connector = sorted(p.name for p in libs.glob("spark-sql-kafka-0-10_*.jar"))
    return {
        "kafka_broker": broker_version,
        "spark": pyspark.__version__,
        "spark_kafka_connector": connector[0].removesuffix(".jar") if connector else None,
        "ours": importlib.metadata.version("checkpointed-jobs"),
        "confluent_kafka": importlib.metadata.version("confluent-kafka"),
        "librdkafka": confluent_kafka.libversion()[0],
    }
