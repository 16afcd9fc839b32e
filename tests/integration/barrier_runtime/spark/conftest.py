"""Fixtures for the tests on real Spark: S3 credentials in the environment, a SparkSession
(local[3]) per module, the generator job's crash-free reference output. (The NATS server
is ``nats_server`` in ``tests/conftest.py``.)

Shared helpers live in ``barrier_runtime_testing.spark_harness`` (``tests/support``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from barrier_runtime_testing import spark_harness

from barrier_runtime.spark import driver, session


@pytest.fixture(scope="session")
def s3_env(s3_server: Any) -> Iterator[Any]:
    """Credentials in the environment before Spark starts: executors inherit it."""
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ["AWS_ACCESS_KEY_ID"] = s3_server.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = s3_server.secret_key
    yield s3_server
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def spark(s3_env: Any) -> Iterator[Any]:
    """One local[3] SparkSession for the module's in-process drivers (Spark starts slowly)."""
    started = time.monotonic()
    # The Python workers take their environment from the JVM, which started with the
    # first SparkSession of this pytest process (perhaps another module's, before these
    # credentials were set): hand them the credentials explicitly.
    spark_session = session.build_session(
        f"local[{spark_harness.P}]",
        app_name="cjob-tests",
        parallelism=spark_harness.P,
        conf={
            "spark.executorEnv.AWS_ACCESS_KEY_ID": s3_env.access_key,
            "spark.executorEnv.AWS_SECRET_ACCESS_KEY": s3_env.secret_key,
        },
    )
    print(f"SparkSession ready in {time.monotonic() - started:.1f}s")
    yield spark_session
    spark_session.stop()


@pytest.fixture(scope="module")
def crash_free(spark: Any, s3_env: Any) -> list[dict[str, Any]]:
    """The generator job's output without faults: the reference every faulty run must equal."""
    out_url, store_url = spark_harness.s3_urls(s3_env)
    spec = spark_harness.job_spec(
        spark_harness.GENERATOR_PIPELINE,
        spark_harness.generator_args(out_url),
        store_url,
        "default/running-count",
    )
    started = time.monotonic()
    result = driver.SparkDriver(spec, session=spark).run()
    print(f"crash-free run: {time.monotonic() - started:.1f}s, {result}")
    assert result.restarts == 0 and result.final_checkpoint is not None
    return spark_harness.published(out_url)
