"""Spec/status round trips, durations, change classification, validation."""

from __future__ import annotations

import json

import pytest

from cjob_operator import validate
from cjob_operator.model import acks, changes, durations, enums, intent, spec, status, times
from cjob_operator.model.enums import (
    ChangeKind,
    DesiredState,
    NonceOutcome,
    Phase,
    RestartType,
    RolloutState,
    SavepointKind,
    SavepointState,
    UpgradeMode,
)
from cjob_operator.model.reasons import Reason
from cjob_operator.model.savepoints import HISTORY_LIMIT, SavepointRecord, SavepointsStatus


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("2", 2.0),
        (1.5, 1.5),
    ],
)
def test_durations(text: str | float, seconds: float) -> None:
    assert durations.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "m5", "1x", "-"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(durations.DurationError):
        durations.parse_duration(text)


def test_bad_spec_values_name_the_field() -> None:
    with pytest.raises(spec.SpecError, match=r"spec.checkpointing.interval"):
        spec.JobSpec.from_storage({"checkpointing": {"interval": "soon"}})
    with pytest.raises(spec.SpecError, match=r"spec.upgradeMode.*Savepoint"):
        spec.JobSpec.from_storage({"upgradeMode": "yolo"})


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("state", "running", DesiredState.RUNNING),
        ("state", "suspended", DesiredState.SUSPENDED),
        ("upgradeMode", "last-checkpoint", UpgradeMode.LAST_CHECKPOINT),
        ("upgradeMode", "savepoint", UpgradeMode.SAVEPOINT),
        ("upgradeMode", "stateless", UpgradeMode.STATELESS),
    ],
)
def test_deprecated_enum_spellings_read_as_the_new_ones(
    field: str, old: str, new: DesiredState | UpgradeMode
) -> None:
    """v1alpha1 accepts the first lower-case spellings as aliases and normalises them."""
    as_alias = spec.JobSpec.from_storage({field: old})
    as_new = spec.JobSpec.from_storage({field: new.value})
    assert as_alias == as_new
    assert getattr(as_alias, "state" if field == "state" else "upgrade_mode") is new
    assert new.value[0].isupper()


def test_switching_to_the_new_spelling_never_redeploys() -> None:
    old = {"image": "x", "state": "running", "upgradeMode": "last-checkpoint"}
    new = {"image": "x", "state": "Running", "upgradeMode": "LastCheckpoint"}
    assert changes.classify(old, new).kind is ChangeKind.IGNORE


def test_aliases_cover_only_enums_whose_values_changed() -> None:
    for enum_name, aliases in enums.DEPRECATED_ALIASES.items():
        cls = getattr(enums, enum_name)
        assert {cls(new) for new in aliases.values()} == set(cls)
        assert not set(aliases) & {m.value for m in cls}


def test_spec_defaults_match_the_crd() -> None:
    sp = spec.JobSpec.from_storage({})
    assert sp.parallelism == 2 and sp.max_parallelism == 128
    assert sp.restart_policy.type is RestartType.ON_FAILURE
    assert sp.storage.prefix == "cjob" and sp.driver.memory == "1Gi"
    assert sp.checkpointing.interval == 30.0 and sp.checkpointing.timeout == 600.0


def test_status_round_trips_through_storage() -> None:
    st = status.JobStatus(
        phase=Phase.RESTARTING,
        conditions=(status.Condition("Ready", "False", "Restarting", "m", 1000.5),),
        observed_generation=3,
        driver=status.DriverStatus("j-driver", "j-driver", 990.0),
        checkpoints=status.CheckpointsStatus(
            status.CompletedCheckpoint(7, "s3://b/p", 995.0, 0.5, 1024, "periodic"),
            status.FailedCheckpoint(8, "timeout", 996.0),
            1,
            status.SavepointRef(6, "s3://b/sp", 900.0),
        ),
        restarts=status.RestartsStatus(2, 999.0, "DriverFailed", 1009.0, (990.0, 999.0)),
        last_reconciled_spec={"image": "x", "restartNonce": 3},
        intent=intent.Intent.deploy(
            "r-1", Reason.DRIVER_FAILED, 999.0, intent.RestoreTarget.latest(), not_before=1009.0
        ),
        error=None,
        savepoints=SavepointsStatus(
            (
                SavepointRecord(
                    SavepointKind.PERIODIC, SavepointState.DISCARDED, 900.0, 5, "s3://b/sp5", 901.0
                ),
                SavepointRecord(
                    SavepointKind.SUSPEND, SavepointState.COMPLETED, 950.0, 6, "s3://b/sp", 951.5
                ),
                SavepointRecord(
                    SavepointKind.MANUAL,
                    SavepointState.FAILED,
                    960.0,
                    message="POST /v1/checkpoints answered 409",
                ),
            ),
            last_periodic_trigger_time=900.0,
        ),
        nonces=acks.NonceAcks(
            checkpoint_trigger=acks.NonceAck(4, NonceOutcome.UNKNOWN, 970.0, "lost", 9, 990.0),
            restart=acks.NonceAck(3, NonceOutcome.IN_PROGRESS, 999.0, "restarting"),
        ),
        last_stable_spec={"image": "w"},
        rollout=status.RolloutStatus(RolloutState.VERIFYING, 999.0),
    )
    stored = st.for_storage()
    assert isinstance(stored["lastReconciledSpec"], str)  # a JSON string, as in the CRD
    assert isinstance(stored["lastStableSpec"], str)
    assert status.JobStatus.from_storage(stored) == st
    assert status.JobStatus.from_storage(json.loads(json.dumps(stored))) == st


def test_unreadable_new_status_parts_read_as_absent() -> None:
    st = status.JobStatus.from_storage(
        {
            "savepoints": {"history": [{"kind": "Sometimes", "state": "Completed"}, "x"]},
            "nonces": {"restartNonce": {"value": 1, "outcome": "Maybe"}},
            "rollout": {"state": "Sideways"},
            "lastStableSpec": "{not json",
        }
    )
    assert st.savepoints.history == () and st.nonces == acks.NonceAcks()
    assert st.rollout is None and st.last_stable_spec is None


def test_savepoint_history_is_bounded_but_keeps_periodic_savepoints_in_storage() -> None:
    periodic = SavepointRecord(SavepointKind.PERIODIC, SavepointState.COMPLETED, 1.0, 1, "p")
    gone = SavepointRecord(SavepointKind.PERIODIC, SavepointState.DISCARDED, 2.0, 2, "q")
    history = SavepointsStatus().record(periodic).record(gone)
    for i in range(3, 3 + HISTORY_LIMIT):
        history = history.record(
            SavepointRecord(SavepointKind.MANUAL, SavepointState.COMPLETED, float(i), i)
        )
    ids = [r.id for r in history.history]
    assert ids == [1, *range(3, 3 + HISTORY_LIMIT)]  # the discarded one fell off
    settled = history.record(history.history[-1].settle(SavepointState.FAILED, 99.0, message="x"))
    assert len(settled.history) == len(history.history)
    assert settled.history[-1].state is SavepointState.FAILED


def test_times_round_trip() -> None:
    assert times.from_rfc3339(times.to_rfc3339(1700000000.25)) == 1700000000.25
    assert times.from_rfc3339("garbage") is None


def test_change_classification() -> None:
    old = {"image": "a", "checkpointing": {"interval": "30s", "timeout": "1m"}}
    assert (
        changes.classify(old, {**old, "checkpointing": {"interval": "10s", "timeout": "1m"}}).kind
        is ChangeKind.IGNORE
    )
    diff = changes.classify(old, {**old, "checkpointing": {"interval": "30s", "timeout": "2m"}})
    assert diff.kind is ChangeKind.UPGRADE
    assert diff.upgrade_paths == ("checkpointing.timeout",)
    assert changes.classify(old, {**old, "parallelism": 8}).kind is ChangeKind.UPGRADE
    assert not changes.classify(old, dict(old)).changed


@pytest.mark.parametrize(
    "key",
    [
        "spark.master",
        "spark.kubernetes.namespace",
        "spark.kubernetes.driver.pod.name",
        "spark.kubernetes.authenticate.driver.serviceAccountName",
        "spark.kubernetes.authenticate.oauthToken",
        "spark.kubernetes.container.image",
        "spark.kubernetes.executor.container.image",
        "spark.authenticate",
        "spark.authenticate.secret",
        "spark.kubernetes.driver.secrets.creds",
        "spark.kubernetes.executor.secretKeyRef.X",
        "spark.executor.instances",
        "spark.kubernetes.executor.volumes.hostPath.root.mount.path",
    ],
)
def test_security_relevant_spark_keys_are_denied(key: str) -> None:
    problems = validate.problems_in_spark_conf({key: "x"})
    assert len(problems) == 1 and key in problems[0] and "managed by the operator" in problems[0]


@pytest.mark.parametrize(
    "key",
    [
        "spark.sql.shuffle.partitions",
        "spark.network.timeout",
        "spark.kubernetes.executor.request.cores",
    ],
)
def test_ordinary_spark_keys_are_allowed(key: str) -> None:
    assert validate.problems_in_spark_conf({key: "1"}) == []


def test_validation_explains_each_problem() -> None:
    sp = spec.JobSpec.from_storage(
        {
            "pipeline": {"module": "m", "file": "f"},
            "parallelism": 9,
            "maxParallelism": 4,
            "executor": {"instances": 2},
            "checkpointing": {"interval": "10s", "minPause": "10s"},
            "storage": {"endpoint": "https://s3", "bucket": "b"},
            "restoreFrom": {"checkpointId": 3, "path": "s3://x"},
        }
    )
    problems = "\n".join(validate.validate(sp))
    for fragment in (
        "spec.image is required",
        "exactly one of module or file",
        "must not exceed spec.maxParallelism",
        "minPause must be shorter",
        "credentialsSecret is required",
        "restoreFrom needs exactly one",
        "task slots",
    ):
        assert fragment in problems


def test_intent_reasons_are_stored_as_plain_text_and_read_back_as_reasons() -> None:
    it = intent.Intent.deploy("r-1", Reason.DRIVER_FAILED, 999.0, intent.RestoreTarget.latest())
    stored = it.for_storage()
    assert type(stored["reason"]) is str and stored["reason"] == "DriverFailed"
    back = intent.Intent.from_storage(stored)
    assert back is not None and back.reason is Reason.DRIVER_FAILED


def test_an_intent_with_a_reason_this_version_does_not_know_is_kept_as_a_restart() -> None:
    stored = {
        **intent.Intent.stop("s-1", Reason.SUSPEND, 5.0, intent.StopPurpose.SUSPEND).for_storage(),
        "reason": "SomethingNewer",
    }
    back = intent.Intent.from_storage(stored)
    assert back is not None and back.purpose is intent.StopPurpose.SUSPEND
    assert back.reason is Reason.RESTART_REQUESTED
