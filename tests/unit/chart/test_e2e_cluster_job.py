"""The CheckpointedJob that ``tests/e2e_cluster/run.sh`` applies is one that loads.

The script stays skipped without a real cluster, so nothing else would notice a
pipeline that cannot be built (it once named ``barrier_runtime.demo`` without the
``--out`` its ``build_flow`` requires: InvalidPipelineError in the driver pod).
"""

from __future__ import annotations

import re
from typing import Any

import chartkit
import yaml

from barrier_runtime.spark import pipeline
from cjob_operator.model import spec as spec_model

SCRIPT = chartkit.ROOT / "tests" / "e2e_cluster" / "run.sh"
SAMPLE = {
    "JOB": "e2e-counts",
    "NS": "cjob-e2e-abc123",
    "RELEASE": "cjob-e2e-abc123",
    "RUNTIME_IMAGE": "ghcr.io/checkpointed-jobs/cjob-runtime:0.1.0",
    "PIPELINE": "barrier_runtime.demo",
}


def _expand(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], text)


def _applied_job() -> dict[str, Any]:
    script = SCRIPT.read_text()
    out_url = re.search(r'^OUT_URL="(.*)"$', script, re.MULTILINE)
    assert out_url is not None, "run.sh no longer defines OUT_URL"
    values = {**SAMPLE, "OUT_URL": _expand(out_url.group(1), SAMPLE)}
    heredoc = re.search(r"apply -f - <<EOF\n(.*?)\nEOF\n", script, re.DOTALL)
    assert heredoc is not None, "run.sh no longer applies its job from a heredoc"
    doc: dict[str, Any] = yaml.safe_load(_expand(heredoc.group(1), values))
    assert doc["kind"] == "CheckpointedJob"
    return doc


def test_the_job_spec_parses_for_the_operator() -> None:
    job = spec_model.JobSpec.from_storage(_applied_job()["spec"])
    assert job.pipeline.module == SAMPLE["PIPELINE"]


def test_its_pipeline_builds_with_the_arguments_it_is_given() -> None:
    raw = _applied_job()["spec"]["pipeline"]
    ref = pipeline.PipelineRef(module=raw["module"], args=tuple(raw.get("args", ())))
    flow = pipeline.load_flow(ref)  # InvalidPipelineError if build_flow rejects the args
    assert flow.steps
