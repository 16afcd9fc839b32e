"""``cjob checkpoints list`` tells corrupt and incomplete checkpoints from good ones (issue 27).

Each row's STATUS is what a restore would make of the checkpoint (every state object
read and checked, as ``cjob checkpoints verify`` does); a corrupt one makes the command
exit 1, so a script notices.
"""

from __future__ import annotations

import json

from stored_checkpoints import commit_checkpoint

JOB = "team/orders"


def _store(tmp_path):
    root = tmp_path / "cp"
    for cid in (1, 2, 3):
        commit_checkpoint(root, cid, JOB)
    job = root / JOB / "checkpoints"
    (job / "chk-0000000002/count/0.arrow").write_bytes(b"STATE")  # same size, other bytes
    (job / "chk-0000000003/_metadata").write_text("{not json")
    (job / "chk-0000000004/count").mkdir(parents=True)
    (job / "chk-0000000004/count/0.arrow").write_bytes(b"half")  # never committed
    return root


def test_the_status_column(cjob, tmp_path) -> None:
    root = _store(tmp_path)
    result = cjob("checkpoints", "list", "--store", str(root), "--job", JOB)
    assert result.code == 1, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == [
        "ID",
        "KIND",
        "COMPLETED",
        "DURATION",
        "SIZE",
        "UPLOADED",
        "P",
        "STATUS",
    ]
    status = {int(r.split()[0]): r.split(None, 7)[7] for r in rows}
    assert status[1] == "ok"
    assert status[2].startswith(
        "corrupt: state object checkpoints/chk-0000000002/count/0.arrow has sha256"
    )
    assert status[3].startswith("corrupt: ") and "_metadata" not in rows[2].split()[2]
    assert status[4] == "incomplete"
    assert rows[3].split()[1:7] == ["checkpoint", "-", "-", "-", "-", "-"]
    assert result.err.strip() == (
        "cjob: 2 of 3 completed checkpoints are corrupt: a restore skips them (cjob checkpoints "
        f"verify --store … --job {JOB} ID shows every problem)"
    )


def test_the_status_in_json(cjob, tmp_path) -> None:
    root = _store(tmp_path)
    result = cjob("checkpoints", "list", "--json", "--store", str(root), "--job", JOB)
    assert result.code == 1
    rows = {row["id"]: row for row in json.loads(result.out)}
    assert {cid: row["status"] for cid, row in rows.items()} == {
        1: "ok",
        2: "corrupt",
        3: "corrupt",
        4: "incomplete",
    }
    assert rows[1]["problems"] == [] and rows[1]["size_bytes"] == rows[1]["uploaded_bytes"] == 5
    assert "has sha256" in rows[2]["problems"][0]
    assert rows[4]["completed"] is None


def test_only_good_checkpoints_exit_0(cjob, tmp_path) -> None:
    root = tmp_path / "cp"
    for cid in (1, 2):
        commit_checkpoint(root, cid, JOB)
    result = cjob("checkpoints", "list", "--store", str(root), "--job", JOB)
    assert result.code == 0 and result.err == ""
    assert [r.split()[-1] for r in result.out.splitlines()[1:]] == ["ok", "ok"]


def test_a_missing_state_object(cjob, tmp_path) -> None:
    root = tmp_path / "cp"
    commit_checkpoint(root, 1, JOB)
    (root / JOB / "checkpoints/chk-0000000001/count/0.arrow").unlink()
    result = cjob("checkpoints", "list", "--store", str(root), "--job", JOB)
    assert result.code == 1
    assert result.out.splitlines()[1].endswith(
        "corrupt: state object checkpoints/chk-0000000001/count/0.arrow is missing"
    )
