"""The stand-in drivers' answers, written with the control API's contract (``control_document``).

The fake and stand-in drivers keep a small record per checkpoint of their own
(``id``, ``status``, ``kind``, ``trigger_timestamp``, … and the test's ``trigger``);
these functions turn records into the exact bodies the real driver sends, so the
operator reads them with the same parser it uses against a real driver.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from barrier_runtime import control_document as contract


def entry(record: Mapping[str, Any]) -> contract.CheckpointEntryDoc:
    status = str(record["status"]).lower()
    return {
        "id": int(record["id"]),
        "status": status,
        "kind": str(record.get("kind", "checkpoint")),
        "trigger_timestamp": float(record["trigger_timestamp"]),
        "latest_ack_timestamp": record.get("completion_timestamp"),
        "completion_timestamp": record.get("completion_timestamp"),
        "failure_timestamp": record.get("failure_timestamp"),
        "duration": record.get("duration"),
        "size": int(record.get("size", 0)),
        "alignment_duration": 0.0,
        "path": record.get("path"),
        "failure_reason": record.get("failure_reason"),
        "failure_message": None,
        "acknowledged": 2 if status == "completed" else 0,
        "tasks": 2,
    }


def overview(records: Sequence[Mapping[str, Any]]) -> contract.CheckpointsDoc:
    """``GET /v1/checkpoints`` over every record (the last 20 in the history)."""
    entries = [entry(r) for r in records]
    completed = [e for e in entries if e["status"] == "completed"]
    failed = [e for e in entries if e["status"] == "failed"]
    consecutive = 0
    for e in reversed(entries):
        if e["status"] != "failed":
            break
        consecutive += 1
    return {
        "api_version": contract.API_VERSION,
        "counts": {
            "triggered": len(entries),
            "in_progress": 0,
            "completed": len(completed),
            "failed": len(failed),
            "rejected": 0,
        },
        "latest": {
            "completed": completed[-1] if completed else None,
            "failed": failed[-1] if failed else None,
            "savepoint": next((e for e in reversed(completed) if e["kind"] == "savepoint"), None),
            "in_progress": None,
        },
        "history": list(reversed(entries[-20:])),
        "consecutive_failures": consecutive,
        "next_id": None,
        "last_rejection": None,
    }


def job(name: str, state: str, started: float, restored_from: int | None = None) -> contract.JobDoc:
    """``GET /v1/job``."""
    return {
        "api_version": contract.API_VERSION,
        "name": name,
        "state": state,
        "attempt": 1,
        "restarts": 0,
        "parallelism": 2,
        "max_parallelism": 128,
        "start_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "start_timestamp": started,
        "ready": state == "RUNNING",
        "restored_from": restored_from,
        "failure": None,
        "failure_detail": None,
        "failure_timestamps": [],
        "startup_seconds": 0.1,
        "storage": None,
    }


def triggered(cid: int, kind: str) -> contract.TriggeredDoc:
    """``POST /v1/checkpoints`` (``202``)."""
    return {
        "api_version": contract.API_VERSION,
        "id": cid,
        "kind": kind,
        "status": "in-progress",
        "message": "",
    }


def stopped(sid: int, path: str) -> contract.StoppedDoc:
    """``POST /v1/stop`` (``200``)."""
    return {
        "api_version": contract.API_VERSION,
        "id": sid,
        "kind": "savepoint",
        "status": "completed",
        "path": path,
    }


def refused(message: str, reason: str) -> contract.ErrorDoc:
    return contract.error_doc(message, reason)
