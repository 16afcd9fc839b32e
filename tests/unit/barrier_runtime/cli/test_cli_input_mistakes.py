"""Option, store, checkpoint and job-configuration mistakes: one sentence, exit 2, before Spark.

All on local stores (the S3 cases are in ``tests/integration/barrier_runtime/cli``).
"""

from __future__ import annotations

import json

import pytest
import stored_checkpoints

from barrier_runtime.storage import object_store

JOB = "team/orders"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--conf", "spark.ui.enabled"], ["--conf expects KEY=VALUE", "'spark.ui.enabled'"]),
        (["--conf", "=x"], ["--conf expects KEY=VALUE"]),
        (["--parallelism", "0"], ["--parallelism must be at least 1", "got 0"]),
        (["-p", "-3"], ["--parallelism must be at least 1", "got -3"]),
        (["--control-port", "70000"], ["--control-port must be a TCP port"]),
    ],
)
def test_bad_options_of_run(cjob, ok_pipeline, argv, words) -> None:
    cjob("run", *argv, ok_pipeline).assert_mistake(*words)


def test_bad_options_of_demo(cjob) -> None:
    cjob("demo", "--parallelism", "0").assert_mistake("--parallelism must be at least 1")
    cjob("demo", "--kill-at", "2").assert_mistake("--kill-at must be a fraction between 0 and 1")


def test_unknown_store_scheme(cjob, ok_pipeline) -> None:
    sentence = cjob("run", "--store", "gs://bucket/cp", ok_pipeline).assert_mistake()
    assert sentence == (
        "--store 'gs://bucket/cp' has the unknown scheme 'gs': use "
        "s3://BUCKET/PREFIX?endpoint=http://HOST:PORT, file:///PATH or a plain path"
    )


@pytest.mark.parametrize("where", ["under-a-file", "in-proc"])
def test_a_store_directory_that_cannot_be_created(cjob, ok_pipeline, tmp_path, where) -> None:
    if where == "under-a-file":
        (tmp_path / "plain").write_text("x")
        store = tmp_path / "plain" / "cp"
    else:
        store = "/proc/cjob-no-such/cp"
    cjob("run", "--store", str(store), ok_pipeline).assert_mistake(
        "cannot create the directory", str(store), "use a store directory that can be created"
    )


def test_restore_from_an_id_that_is_not_in_the_store(cjob, ok_pipeline, tmp_path) -> None:
    store = tmp_path / "cp"
    cjob("run", "--store", str(store), "--restore-from", "42", ok_pipeline).assert_mistake(
        "checkpoint 42 is not in", str(store), "job default/p", "cjob checkpoints list"
    )


# -- cjob checkpoints ---------------------------------------------------------


def _commit(root, cid: int) -> None:
    stored_checkpoints.commit_checkpoint(root, cid, JOB)


@pytest.mark.parametrize("action", ["list", "show", "verify", "delete"])
def test_checkpoints_of_a_store_directory_that_does_not_exist(cjob, tmp_path, action) -> None:
    missing = tmp_path / "no-such-store"
    argv = ["checkpoints", action, "--store", str(missing), "--job", JOB]
    sentence = cjob(*argv, *([] if action == "list" else ["1"])).assert_mistake()
    assert sentence == f"the store directory {missing} does not exist: check --store"
    assert not missing.exists()


@pytest.mark.parametrize("action", ["list", "show", "verify", "delete"])
def test_checkpoints_of_a_job_that_is_not_in_the_store(cjob, tmp_path, action) -> None:
    _commit(tmp_path / "cp", 1)
    argv = ["checkpoints", action, "--store", str(tmp_path / "cp"), "--job", "team/order"]
    cjob(*argv, *([] if action == "list" else ["1"])).assert_mistake(
        f"{(tmp_path / 'cp').as_uri()} holds nothing for job team/order", "check --store and --job"
    )


@pytest.mark.parametrize("action", ["show", "verify", "delete"])
def test_checkpoints_with_an_unknown_id(cjob, tmp_path, action) -> None:
    _commit(tmp_path / "cp", 1)
    argv = ["checkpoints", action, "--store", str(tmp_path / "cp"), "--job", JOB, "999"]
    cjob(*argv).assert_mistake("checkpoint 999 is not in", f"job {JOB}", "cjob checkpoints list")


def test_an_existing_job_without_completed_checkpoints_says_so_and_exits_1(cjob, tmp_path) -> None:
    store = object_store.open_object_store(str(tmp_path / "cp"))
    store.put(f"{JOB}/checkpoints/chk-0000000001/count/0.arrow", b"torn: never committed")
    result = cjob("checkpoints", "list", "--store", str(tmp_path / "cp"), "--job", JOB)
    assert result.code == 1
    assert result.out.splitlines()[1].split() == [
        "1",
        "checkpoint",
        "-",
        "-",
        "-",
        "-",
        "-",
        "incomplete",
    ]
    assert (
        result.err.startswith(f"cjob: job {JOB} in ")
        and "has no completed checkpoint" in result.err
    )


def test_checkpoints_commands_that_succeed_leave_no_log_file(cjob, tmp_path, log_dir) -> None:
    _commit(tmp_path / "cp", 3)
    listed = cjob("checkpoints", "list", "--store", str(tmp_path / "cp"), "--job", JOB, "--json")
    assert listed.code == 0 and [row["id"] for row in json.loads(listed.out)] == [3]
    shown = cjob("checkpoints", "show", "--store", str(tmp_path / "cp"), "--job", JOB, "3")
    assert shown.code == 0 and json.loads(shown.out)["checkpoint_id"] == 3
    assert not log_dir.exists() or not list(log_dir.iterdir())


# -- cjob driver --------------------------------------------------------------


def _config(tmp_path, doc) -> str:
    path = tmp_path / "job.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def _doc(**changes):
    doc = {
        "pipeline": {"module": "barrier_runtime.demo", "args": ["--out", "/tmp/x"]},
        "parallelism": 2,
        "storage": {"bucket": "b", "endpoint": "file:///tmp/cjob-never"},
    }
    return {**doc, **changes}


def test_driver_with_a_missing_config_file(cjob, tmp_path) -> None:
    missing = tmp_path / "job.json"
    sentence = cjob("driver", "--config", str(missing)).assert_mistake()
    assert sentence == (
        f"cannot read the job configuration {missing} (No such file or directory): "
        "check the --config path"
    )


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ("{not json", ["is not JSON", "line 1 column 2", "fix the file"]),
        ("[1, 2]", ["must be a JSON object, not list"]),
        (
            _doc(parallelism="two"),
            [
                "`parallelism` in the job configuration is 'two', not an integer",
                "fix the CheckpointedJob spec",
            ],
        ),
        ({"parallelism": 2}, ["lacks `pipeline`"]),
        (
            _doc(pipeline="jobs.orders"),
            ["`pipeline` in the job configuration must be a JSON object, not str"],
        ),
        (_doc(storage={"endpoint": "http://x"}), ["lacks `storage.bucket`"]),
        (
            _doc(checkpointing={"intervalSeconds": "often"}),
            ["`checkpointing.intervalSeconds` in the job configuration is 'often', not a number"],
        ),
        (_doc(checkpointing={"mode": "Sometimes"}), ["`checkpointing.mode` 'Sometimes'"]),
        (
            _doc(restartPolicy={"backoff": {"jitter": [1]}}),
            ["`restartPolicy.backoff.jitter` in the job configuration is [1], not a number"],
        ),
        (_doc(maxParallelism="many"), ["`maxParallelism`", "'many', not an integer"]),
        (_doc(parallelism=0), ["`parallelism` in the job configuration is 0"]),
    ],
)
def test_driver_with_an_invalid_config(cjob, tmp_path, doc, words) -> None:
    cjob("driver", "--config", _config(tmp_path, doc)).assert_mistake(*words)


def test_driver_with_a_missing_pipeline_names_it(cjob, tmp_path) -> None:
    doc = _doc(pipeline={"file": str(tmp_path / "gone.py")})
    cjob("driver", "--config", _config(tmp_path, doc)).assert_mistake(
        f"pipeline file {tmp_path / 'gone.py'} does not exist"
    )


def test_driver_refuses_a_pipeline_whose_max_parallelism_differs_from_the_job(
    cjob, tmp_path
) -> None:
    """spec.maxParallelism reaches the driver as job.json's maxParallelism; the operator cannot
    import the pipeline, so the driver refuses before Spark starts, with one sentence (exit 2)
    that becomes the pod's termination message, which the operator puts in status.error."""
    doc = _doc(maxParallelism=256)  # barrier_runtime.demo builds its Dataflow with 128
    sentence = cjob("driver", "--config", _config(tmp_path, doc)).assert_mistake(
        "maxParallelism is 256 in the job but 128 in the pipeline", "make them equal"
    )
    assert "barrier_runtime.demo" in sentence
