"""StateChain: a base, then deltas; a background base switched to once uploaded; a broken
link starts a new chain. Restoring what a snapshot references gives the state as of it."""

from __future__ import annotations

import random

import pytest

from barrier_runtime.core import metadata, types
from barrier_runtime.state import keyed
from barrier_runtime.task import state_chains

STEP = types.StepId("count")
MAXP = 128


def upload(link: state_chains.Link) -> metadata.StateHandle:
    """Settle ``link`` as the store would: its bytes become the handle's key."""
    data = link.encode()
    handle = metadata.StateHandle(
        STEP,
        0,
        f"shared/{link.as_of}-{len(data)}",
        len(data),
        "",
        as_of=link.as_of,
        delta=link.delta,
    )
    link.succeeded(handle)
    BYTES[handle.key] = data
    return handle


BYTES: dict[str, bytes] = {}


def restored(snap: state_chains.ChainSnapshot) -> dict[object, object]:
    handles = sorted((link.handle(0) for link in snap.references), key=lambda h: h.restore_order)
    fresh = keyed.KeyedState((0, MAXP - 1), MAXP)
    fresh.restore(BYTES[h.key] for h in handles)
    return dict(fresh.values)


def snapshot(
    chain: state_chains.StateChain, cid: int, state: keyed.KeyedState
) -> state_chains.ChainSnapshot:
    snap = chain.snapshot(types.CheckpointId(cid), state, STEP, "count/0.arrow")
    for link in snap.uploads:
        upload(link)
    return snap


def test_the_first_snapshot_is_a_base_and_later_ones_are_deltas_of_changed_keys() -> None:
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    for k in range(100):
        state.put(k, k)
    chain = state_chains.StateChain(state_chains.MaterializationPolicy(max_deltas=50))
    first = snapshot(chain, 1, state)
    assert [(link.delta, link.rows) for link in first.references] == [(False, 100)]
    state.put(3, 33)
    state.put(4, None)
    second = snapshot(chain, 2, state)
    assert [(link.delta, link.rows) for link in second.uploads] == [(True, 2)]
    assert [link.as_of for link in second.references] == [1, 2]
    want = {k: k for k in range(100)} | {3: 33}
    del want[4]
    assert restored(second) == want
    third = snapshot(chain, 3, state)  # nothing changed: an empty delta
    assert third.uploads[0].rows == 0 and restored(third) == want


def test_random_changes_restore_exactly_through_deltas_and_new_bases() -> None:
    rng = random.Random(7)
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    policy = state_chains.MaterializationPolicy(max_deltas=6, max_delta_ratio=0.5, min_rows=10)
    chain = state_chains.StateChain(policy)
    bases = set()
    for cid in range(1, 60):
        for _ in range(rng.randrange(0, 40)):
            key = rng.choice([rng.randrange(60), f"k{rng.randrange(60)}"])
            state.put(key, None if rng.random() < 0.2 else [cid, rng.random()])
        snap = snapshot(chain, cid, state)
        for link in snap.background:
            upload(link)
        bases.add(snap.references[0].as_of)
        assert len(snap.references) <= 1 + policy.max_deltas + 1
        assert restored(snap) == state.values
    assert len(bases) > 3  # it materialised again and again


def test_a_delta_as_large_as_the_base_is_uploaded_as_a_new_base() -> None:
    """A burst of changes (e.g. keys loaded while the first base uploaded) becomes a base:
    not a delta as costly as one that would then call for a base as well."""
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    for k in range(100):
        state.put(k, k)
    policy = state_chains.MaterializationPolicy(max_delta_ratio=1.0, min_rows=10)
    chain = state_chains.StateChain(policy)
    snapshot(chain, 1, state)
    for k in range(100, 199):  # 99 new keys: a delta just under the base's 100 rows
        state.put(k, k)
    near = snapshot(chain, 2, state)
    assert [(link.delta, link.rows) for link in near.uploads] == [(True, 99)]
    assert not near.background
    for k in range(199, 600):  # 401 new keys: more than the base's 100 rows
        state.put(k, k)
    burst = snapshot(chain, 3, state)
    assert [(link.delta, link.rows, link.as_of) for link in burst.uploads] == [(False, 600, 3)]
    assert burst.references == burst.uploads and not burst.background
    assert restored(burst) == {k: k for k in range(600)}
    state.put(0, "changed")
    after = snapshot(chain, 4, state)  # the new chain goes on with deltas of what changed
    assert [(link.as_of, link.delta, link.rows) for link in after.references] == [
        (3, False, 600),
        (4, True, 1),
    ]
    assert restored(after) == {k: k for k in range(600)} | {0: "changed"}


def test_a_background_base_does_not_hold_its_checkpoint_back_and_is_used_once_uploaded() -> None:
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    state.put("a", 1)
    chain = state_chains.StateChain(state_chains.MaterializationPolicy(max_deltas=2))
    snapshot(chain, 1, state)
    state.put("b", 2)
    snapshot(chain, 2, state)
    state.put("c", 3)
    due = snapshot(chain, 3, state)
    (background,) = due.background
    assert background.as_of == 3
    assert [link.as_of for link in due.references] == [1, 2, 3]  # not waiting for it
    state.put("d", 4)
    before = snapshot(chain, 4, state)  # still uploading: the old base goes on
    assert [link.as_of for link in before.references] == [1, 2, 3, 4]
    upload(background)
    state.put("e", 5)
    after = snapshot(chain, 5, state)
    assert [(link.as_of, link.delta) for link in after.references] == [
        (3, False),
        (4, True),
        (5, True),
    ]
    assert restored(after) == {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}


def test_a_failed_background_base_is_dropped_and_the_chain_goes_on() -> None:
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    state.put("a", 1)
    chain = state_chains.StateChain(state_chains.MaterializationPolicy(max_deltas=1))
    snapshot(chain, 1, state)
    state.put("b", 2)
    due = snapshot(chain, 2, state)
    (background,) = due.background
    background.failed()
    state.put("c", 3)
    nxt = snapshot(chain, 3, state)
    assert [link.as_of for link in nxt.references] == [1, 2, 3]
    assert [link.as_of for link in nxt.background] == [3]  # tried again


def test_a_failed_delta_fails_the_checkpoints_that_reference_it_and_a_new_chain_starts() -> None:
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    state.put("a", 1)
    chain = state_chains.StateChain(state_chains.MaterializationPolicy(max_deltas=50))
    snapshot(chain, 1, state)
    state.put("b", 2)
    broken = chain.snapshot(types.CheckpointId(2), state, STEP, "count/0.arrow")
    state.put("c", 3)
    later = chain.snapshot(types.CheckpointId(3), state, STEP, "count/0.arrow")  # before it fails
    broken.uploads[0].failed()
    upload(later.uploads[0])
    with pytest.raises(state_chains.ChainBrokenError, match="could not be uploaded"):
        [link.handle(0) for link in later.references]
    fresh = snapshot(chain, 4, state)
    assert [(link.as_of, link.delta) for link in fresh.references] == [(4, False)]
    assert restored(fresh) == {"a": 1, "b": 2, "c": 3}


def test_a_link_not_uploaded_in_time_is_an_error_not_a_hang() -> None:
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    chain = state_chains.StateChain(state_chains.MaterializationPolicy())
    snap = chain.snapshot(types.CheckpointId(1), state, STEP, "count/0.arrow")
    with pytest.raises(state_chains.ChainBrokenError, match="not uploaded within"):
        snap.references[0].handle(timeout=0.01)


def test_the_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="max_deltas"):
        state_chains.MaterializationPolicy(max_deltas=0)
    with pytest.raises(ValueError, match="max_delta_ratio"):
        state_chains.MaterializationPolicy(max_delta_ratio=0)


def test_a_delta_needs_tracking_and_tombstones_only_delete() -> None:
    state = keyed.KeyedState((0, MAXP - 1), MAXP)
    with pytest.raises(RuntimeError, match="track_changes"):
        state.delta_copy("count")
    state.track_changes()
    state.put("gone", None)  # deleting a key that never existed
    delta = state.delta_copy("count")
    fresh = keyed.KeyedState((0, MAXP - 1), MAXP)
    fresh.put("kept", 1)
    fresh.restore([delta.encode()])
    assert fresh.values == {"kept": 1}
    assert keyed.read_table(delta.encode()).schema.metadata[keyed.DELTA_KEY] == b"1"
