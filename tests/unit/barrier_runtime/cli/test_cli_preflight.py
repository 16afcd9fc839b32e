"""Everything checkable is checked before Spark starts (issue 11, item 6).

Each bad input is one case: ``cjob`` ends with exit 2 and one sentence naming
the option as the user wrote it, no traceback, before any SparkSession is
built (a recording double stands in for ``build_session``) and in less time
than Spark takes to start. The first tests show the double does see a
command that gets past its checks, so "never reached" means something.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from stored_checkpoints import commit_ok_pipeline_checkpoint

# -- the double sees a command that passes -----------------------------------------------


@pytest.mark.parametrize(
    "restore",
    [
        None,
        "1",
        "chk-1",
        "{store}/default/p/checkpoints/chk-0000000001",
        "default/p/checkpoints/chk-0000000001/_metadata",
        "file://{store}/default/p/checkpoints/chk-0000000001",
    ],
)
def test_a_valid_run_gets_as_far_as_starting_spark(
    cjob, spark_starts, ok_pipeline, tmp_path, restore
) -> None:
    store = tmp_path / "cp"
    commit_ok_pipeline_checkpoint(store, 1)
    extra = [] if restore is None else ["--restore-from", restore.format(store=store)]
    result = cjob("run", ok_pipeline, "--store", str(store), *extra)
    assert spark_starts == ["local[2]"], result.err
    assert "starting Spark (local[2])" in result.out
    assert result.assert_mistake() == "this unit test does not start Spark"


def test_a_valid_demo_gets_as_far_as_starting_spark(cjob, spark_starts, tmp_path) -> None:
    result = cjob("demo", "--store", str(tmp_path / "store"), "--keys", "3")
    assert spark_starts == ["local[3]"], result.err


# -- option values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        pytest.param(
            ["--control-port", "99999"],
            "--control-port must be a TCP port from 0 to 65535 (0 picks a free one), got 99999",
            id="control-port-too-high",
        ),
        pytest.param(
            ["--control-port", "-1"],
            "--control-port must be a TCP port from 0 to 65535 (0 picks a free one), got -1",
            id="control-port-negative",
        ),
        pytest.param(
            ["--max-restarts", "-1"],
            "--max-restarts must not be negative (0 fails the job at the first failure), got -1",
            id="max-restarts",
        ),
        pytest.param(
            ["--restart-window", "0"],
            "--restart-window must be a positive number (seconds in which "
            "--max-restarts count), got 0",
            id="restart-window",
        ),
        pytest.param(
            ["--restart-backoff", "-2"],
            "--restart-backoff must not be negative (seconds before the first restart), got -2",
            id="restart-backoff",
        ),
        pytest.param(
            ["--checkpoint-interval", "0"],
            "--checkpoint-interval must be a positive number (seconds between checkpoints), got 0",
            id="checkpoint-interval",
        ),
        pytest.param(
            ["--checkpoint-interval", "nan"],
            "--checkpoint-interval must be a positive number (seconds between "
            "checkpoints), got nan",
            id="checkpoint-interval-nan",
        ),
        pytest.param(
            ["--checkpoint-timeout", "-1"],
            "--checkpoint-timeout must be a positive number (seconds a checkpoint may "
            "take), got -1",
            id="checkpoint-timeout",
        ),
        pytest.param(
            ["--stop-grace-period", "0"],
            "--stop-grace-period must be a positive number, got 0",
            id="stop-grace-period",
        ),
        pytest.param(
            ["--status-every", "0"],
            "--status-every must be a positive number, got 0",
            id="status-every",
        ),
        pytest.param(
            ["--mode", "at-least-once", "--unaligned"],
            "--unaligned needs --mode exactly-once (unaligned checkpoints store in-flight "
            "records, which only exactly-once needs), got at-least-once",
            id="unaligned-at-least-once",
        ),
        pytest.param(
            ["-p", "0"],
            "--parallelism must be at least 1 (the number of Spark workers), got 0: use e.g. -p 2",
            id="parallelism-zero",
        ),
        pytest.param(
            ["--job", "a//b"],
            "--job must be NAMESPACE/NAME (e.g. default/orders), got 'a//b'",
            id="job",
        ),
        pytest.param(
            ["--restore-from", "latest"],
            "--restore-from 'latest' names no checkpoint: give an id (42), chk-42, sp-42 "
            "or the path of a checkpoint or savepoint directory",
            id="restore-garbage",
        ),
    ],
)
def test_bad_option_values_of_run(refused, ok_pipeline, tmp_path, argv, sentence) -> None:
    assert refused("run", ok_pipeline, "--store", str(tmp_path / "cp"), *argv).sentence == sentence


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        pytest.param(["--keys", "0"], "--keys must be at least 1, got 0", id="keys"),
        pytest.param(
            ["--events-per-key", "-5"],
            "--events-per-key must be at least 1, got -5",
            id="events-per-key",
        ),
        pytest.param(
            ["--interval", "0"],
            "--interval must be a positive number (seconds between checkpoints), got 0",
            id="interval",
        ),
        pytest.param(
            ["--rate", "0"],
            "--rate must be a positive number (events per second), got 0",
            id="rate",
        ),
        pytest.param(
            ["--parallelism", "0"],
            "--parallelism must be at least 1 (the number of Spark workers), got 0",
            id="parallelism",
        ),
        pytest.param(
            ["--kill-at", "1.5"],
            "--kill-at must be a fraction between 0 and 1 (e.g. 0.45), got 1.5",
            id="kill-at",
        ),
        pytest.param(
            ["--store", "localhost:9000"],
            "--store 'localhost:9000' is a server "
            "address, not a store: for an S3 server write "
            "s3://BUCKET/PREFIX?endpoint=http://localhost:9000, for a local directory "
            "./localhost:9000",
            id="store-host-port",
        ),
    ],
)
def test_bad_option_values_of_demo(refused, argv, sentence) -> None:
    assert refused("demo", *argv).sentence == sentence


# -- the store URL ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("store", "sentence"),
    [
        pytest.param(
            "localhost:9000",
            "--store 'localhost:9000' is a server address, not a store: for an S3 "
            "server write s3://BUCKET/PREFIX?endpoint=http://localhost:9000, for a "
            "local directory ./localhost:9000",
            id="host-port",
        ),
        pytest.param(
            "minio:9000/checkpoints",
            "--store 'minio:9000/checkpoints' is a server address, not a store: for an "
            "S3 server write s3://BUCKET/PREFIX?endpoint=http://minio:9000, for a local "
            "directory ./minio:9000/checkpoints",
            id="host-port-path",
        ),
        pytest.param(
            "http://127.0.0.1:9000/bucket",
            "--store 'http://127.0.0.1:9000/bucket' is an HTTP address, not a store: "
            "for an S3 server write s3://BUCKET/PREFIX?endpoint=http://127.0.0.1:9000",
            id="http",
        ),
        pytest.param(
            "gcs://bucket/cp",
            "--store 'gcs://bucket/cp' has the unknown scheme 'gcs': use "
            "s3://BUCKET/PREFIX?endpoint=http://HOST:PORT, file:///PATH or a plain path",
            id="unknown-scheme",
        ),
        pytest.param(
            "s3://bucket/cp?endpoint=localhost:9000",
            "the S3 endpoint 'localhost:9000' (in --store) has no scheme: write "
            "http://localhost:9000 (or https://localhost:9000 for TLS)",
            id="endpoint-without-scheme",
        ),
        pytest.param(
            "",
            "--store is empty: give a directory or an s3://BUCKET/PREFIX?endpoint=… URL",
            id="empty",
        ),
    ],
)
def test_bad_store_urls(refused, ok_pipeline, tmp_path, monkeypatch, store, sentence) -> None:
    monkeypatch.chdir(tmp_path)
    assert refused("run", ok_pipeline, "--store", store).sentence == sentence
    assert not (tmp_path / "localhost:9000").exists()


def test_an_endpoint_from_the_environment_needs_a_scheme_too(
    refused, ok_pipeline, monkeypatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "minio:9000")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    assert refused("run", ok_pipeline, "--store", "s3://bucket/cp").sentence == (
        "the S3 endpoint 'minio:9000' (from $AWS_ENDPOINT_URL) has no scheme: write "
        "http://minio:9000 (or https://minio:9000 for TLS)"
    )


# -- cjob driver: the job configuration's names ------------------------------------------


def _driver_doc(tmp_path: pathlib.Path, **changes: object) -> str:
    doc = {
        "pipeline": {"module": "barrier_runtime.demo", "args": ["--out", str(tmp_path / "out")]},
        "parallelism": 2,
        "storage": {"bucket": "cjob", "endpoint": (tmp_path / "s3").as_uri()},
        **changes,
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        pytest.param(
            {"restartPolicy": {"maxRestarts": -1}},
            "`restartPolicy.maxRestarts` in the job configuration must not be negative, got -1",
            id="max-restarts",
        ),
        pytest.param(
            {"restartPolicy": {"windowSeconds": 0}},
            "`restartPolicy.windowSeconds` in the job configuration must be a positive "
            "number, got 0",
            id="window",
        ),
        pytest.param(
            {"restartPolicy": {"backoff": {"jitter": 2}}},
            "`restartPolicy.backoff.jitter` in the job configuration must be between 0 "
            "and 1, got 2",
            id="jitter",
        ),
        pytest.param(
            {"checkpointing": {"intervalSeconds": 0}},
            "`checkpointing.intervalSeconds` in the job configuration must be a positive "
            "number (seconds between checkpoints), got 0",
            id="interval",
        ),
        pytest.param(
            {"checkpointing": {"retained": 0}},
            "`checkpointing.retained` in the job configuration must be at least 1, got 0",
            id="retained",
        ),
        pytest.param(
            {"control": {"port": 70000}},
            "`control.port` in the job configuration must be a TCP port from 0 to 65535 "
            "(0 picks a free one), got 70000",
            id="control-port",
        ),
        pytest.param(
            {"storage": {"bucket": "cjob", "endpoint": "minio:9000"}},
            "`storage.endpoint` in the job configuration is 'minio:9000': it must start "
            "with http:// or https:// (an S3 endpoint such as http://minio:9000) or "
            "file://",
            id="endpoint-without-scheme",
        ),
    ],
)
def test_bad_values_of_a_job_configuration(refused, tmp_path, changes, sentence) -> None:
    result = refused("driver", "--config", _driver_doc(tmp_path, **changes))
    assert (
        result.sentence == f"{sentence}: fix the CheckpointedJob spec (or the file) and start "
        "the driver again"
    )


def test_driver_restore_from_a_path_that_does_not_exist(refused, tmp_path) -> None:
    refused(
        "driver",
        "--config",
        _driver_doc(tmp_path),
        "--restore-from",
        str(tmp_path / "gone" / "sp-0000000004"),
    ).result.assert_mistake(f"--restore-from {tmp_path / 'gone' / 'sp-0000000004'} does not exist")


def test_a_valid_driver_gets_as_far_as_starting_spark(cjob, spark_starts, tmp_path) -> None:
    cjob("driver", "--config", _driver_doc(tmp_path))
    assert spark_starts == ["local[2]"]
