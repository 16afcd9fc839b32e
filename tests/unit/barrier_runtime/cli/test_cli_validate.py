"""``cjob validate``: CheckpointedJob manifests checked offline with the CRD's schema and rules."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from collections.abc import Callable

import cli_contract
import pytest
import yaml
from cjob_operator_testing.invalid_specs import INVALID, ROOT, invalid, minimal

from barrier_runtime.cli import validate_cmd
from cjob_operator import admission

Cjob = Callable[..., cli_contract.CliOutcome]


def _write(path: pathlib.Path, *documents: object) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


@pytest.mark.parametrize("case", sorted(INVALID))
def test_each_spec_the_crd_refuses_is_refused_with_the_operators_sentence(
    cjob: Cjob, tmp_path: pathlib.Path, case: str
) -> None:
    job = invalid(case)
    sentence = admission.refusal(job)
    assert sentence is not None

    result = cjob("validate", _write(tmp_path / "job.yaml", job))

    assert (result.code, result.out) == (2, "")
    assert result.err == f"cjob: error: {tmp_path / 'job.yaml'}: {sentence}\n"


def test_a_valid_job_passes_and_other_kinds_are_skipped(cjob: Cjob, tmp_path: pathlib.Path) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}}
    path = _write(tmp_path / "all.yaml", secret, minimal("good"))

    result = cjob("validate", path)

    assert (result.code, result.err) == (0, "")
    assert result.out == f"{path} (document 2): CheckpointedJob good: valid\n"


def test_every_file_is_checked_and_one_bad_job_makes_it_fail(
    cjob: Cjob, tmp_path: pathlib.Path
) -> None:
    good = _write(tmp_path / "good.yaml", minimal("good"))
    bad = _write(tmp_path / "bad.yaml", minimal("fine"), invalid("nonce-string"))

    result = cjob("validate", bad, good)

    assert result.code == 2
    assert result.out.splitlines() == [
        f"{bad} (document 1): CheckpointedJob fine: valid",
        f"{good}: CheckpointedJob good: valid",
    ]
    [error] = result.err.splitlines()
    assert error.startswith(f"cjob: error: {bad} (document 2): CheckpointedJob.checkpointed.dev ")
    assert "spec.restartNonce in body must be of type integer" in error


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("apiVersion: v1\nkind: Secret\n", "holds no CheckpointedJob"),
        ("spec: [unclosed\n", "not valid YAML"),
    ],
    ids=["no-job", "not-yaml"],
)
def test_a_file_without_a_job_or_not_yaml_is_a_mistake(
    cjob: Cjob, tmp_path: pathlib.Path, text: str, words: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)

    result = cjob("validate", str(path))

    assert result.code == 2
    assert result.err.startswith(f"cjob: error: {path}: {words}")


def test_a_missing_file_is_a_mistake(cjob: Cjob, tmp_path: pathlib.Path) -> None:
    result = cjob("validate", str(tmp_path / "absent.yaml"))

    assert result.code == 2
    assert "absent.yaml: cannot read it" in result.err


def test_the_example_manifests_are_valid(cjob: Cjob) -> None:
    examples = sorted(str(p) for p in (ROOT / "examples" / "manifests").glob("*.yaml"))

    result = cjob("validate", *examples)

    assert (result.code, result.err) == (0, ""), result.err


def test_the_cli_imports_the_operator_only_when_validate_runs() -> None:
    code = (
        "import sys\n"
        "import barrier_runtime.cli\n"
        "assert not [m for m in sys.modules if m.startswith('cjob_operator')]\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )

    assert result.returncode == 0, result.stderr


def test_without_the_libraries_it_says_which_extra_to_install(
    cjob: Cjob, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cjob_operator", None)  # as if not installed

    result = cjob("validate", _write(tmp_path / "job.yaml", minimal("good")))

    assert result.code == 2
    assert f"pip install '{validate_cmd.EXTRA}'" in result.err
