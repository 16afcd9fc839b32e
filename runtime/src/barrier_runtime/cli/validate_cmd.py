"""``cjob validate FILE...``: check CheckpointedJob manifests offline, before ``kubectl apply``.

Each ``CheckpointedJob`` in the files (YAML, several documents per file allowed,
``-`` reads stdin) is judged by the CRD's own schema and CEL rules, exactly as
the operator judges every job it reads (:mod:`cjob_operator.admission`, imported
only when this command runs, so the runtime does not depend on the operator):
a refused one is reported with the sentence the API server (and the operator)
would give, e.g.::

    $ cjob validate job.yaml
    cjob: error: job.yaml: CheckpointedJob.checkpointed.dev "wordcount" is invalid:
    spec.checkpointing.interval: Invalid value: "1m30s": spec.checkpointing.interval in
    body should match '^[0-9]{1,6}(ms|s|m|h)$'

Other kinds (a Secret next to the job) are skipped. Exit code 0 when every job is
valid, 2 when one is not, or a file cannot be read or holds no CheckpointedJob.
Against a cluster, ``kubectl apply --dry-run=server -f job.yaml`` asks the API
server itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from barrier_runtime.cli import failures

KIND = "CheckpointedJob"
EXTRA = "checkpointed-jobs[validate]"
"""The extra that brings what the check needs (jsonschema, cel-python, PyYAML)."""


class ValidationUnavailableError(ValueError):
    """The libraries the check needs are not installed."""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "validate",
        help="check CheckpointedJob manifests against the CRD's schema and rules, offline",
        description=(
            "Each CheckpointedJob in the files is judged by the CRD's own schema and CEL "
            "rules, as the operator judges every job it reads; a refused one is reported "
            "with the sentence the API server and the operator give (exit code 2). Other "
            "kinds are skipped. Against a cluster, `kubectl apply --dry-run=server -f FILE` "
            "asks the API server itself."
        ),
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="manifest files (YAML; several documents per file; - reads stdin)",
    )
    parser.set_defaults(run=run)


@dataclass(frozen=True, slots=True)
class Verdict:
    """One CheckpointedJob of one file: ``refusal`` is ``None`` when it is valid."""

    where: str
    name: str
    refusal: str | None


def run(args: argparse.Namespace) -> int:
    refusal = _refusal_function()
    problems = 0
    for name in args.files:
        try:
            verdicts = list(_judge(name, refusal))
        except _UnreadableError as exc:
            print(f"cjob: error: {exc}", file=sys.stderr)
            problems += 1
            continue
        for verdict in verdicts:
            if verdict.refusal is None:
                print(f"{verdict.where}: {KIND} {verdict.name}: valid")
            else:
                print(f"cjob: error: {verdict.where}: {verdict.refusal}", file=sys.stderr)
                problems += 1
    sys.stderr.flush()
    return failures.EXIT_MISTAKE if problems else 0


Refusal = Callable[[Mapping[str, Any]], str | None]


def _refusal_function() -> Refusal:
    try:
        from cjob_operator import admission  # noqa: PLC0415 (the operator only when asked)
    except ImportError as exc:
        raise ValidationUnavailableError(
            f"cjob validate needs {exc.name or 'a library'} to check manifests: "
            f"pip install '{EXTRA}'"
        ) from exc
    return admission.refusal


class _UnreadableError(Exception):
    """A file cannot be read, does not parse, or holds no CheckpointedJob."""


def _judge(name: str, refusal: Refusal) -> Iterator[Verdict]:
    import yaml  # noqa: PLC0415 (with the extra, like the check itself)

    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except (OSError, UnicodeDecodeError) as exc:
        raise _UnreadableError(f"{name}: cannot read it: {exc}") from exc
    except yaml.YAMLError as exc:
        raise _UnreadableError(f"{name}: not valid YAML: {' '.join(str(exc).split())}") from exc
    jobs = [(i, d) for i, d in enumerate(documents, 1) if _is_job(d)]
    if not jobs:
        raise _UnreadableError(f"{name}: holds no {KIND} (kind: {KIND})")
    for index, document in jobs:
        where = name if len(documents) == 1 else f"{name} (document {index})"
        meta = document.get("metadata")
        job_name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
        yield Verdict(where, job_name or "(no name)", refusal(document))


def _is_job(document: object) -> bool:
    return isinstance(document, Mapping) and document.get("kind") == KIND
