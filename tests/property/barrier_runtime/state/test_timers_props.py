"""Random timer registrations, deletions, firings and snapshots against a sorted-set model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.state.timers import Domain, Timer, TimerService

keys = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "c"]), st.just(b"k"))
ops = st.one_of(
    st.tuples(
        st.just("register"), st.sampled_from(Domain), keys, st.integers(0, 50), st.integers(0, 2)
    ),
    st.tuples(
        st.just("delete"), st.sampled_from(Domain), keys, st.integers(0, 50), st.integers(0, 2)
    ),
    st.tuples(st.just("fire"), st.sampled_from(Domain), st.integers(0, 60)),
    st.tuples(
        st.just("restore"),
    ),
)


def order(t: Timer) -> tuple[int, str, object, tuple[int, ...]]:
    return (t.time, type(t.key).__name__, t.key, t.namespace)


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=80))
def test_timers_fire_once_in_order_and_survive_a_restore(script: list[tuple]) -> None:
    service = TimerService((0, 127), 128)
    model: dict[Domain, set[Timer]] = {d: set() for d in Domain}
    for op in script:
        if op[0] == "restore":
            blob = service.snapshot_copy("t").encode()
            service = TimerService((0, 127), 128)
            service.restore([blob])
        elif op[0] == "fire":
            _, domain, until = op
            due = sorted((t for t in model[domain] if t.time <= until), key=order)
            assert service.pop_due(domain, until) == due
            model[domain] -= set(due)
        else:
            kind, domain, key, time, ns = op
            timer = Timer(time, key, (ns,) if ns else ())
            if kind == "register":
                service.register(domain, key, time, timer.namespace)
                model[domain].add(timer)
            else:
                service.delete(domain, key, time, timer.namespace)
                model[domain].discard(timer)
        for domain in Domain:
            expected = min((t.time for t in model[domain]), default=None)
            assert service.next_time(domain) == expected
    assert len(service) == sum(len(m) for m in model.values())


def test_a_restore_at_another_parallelism_keeps_only_its_key_groups() -> None:
    whole = TimerService((0, 127), 128)
    for key in range(200):
        whole.register(Domain.EVENT_TIME, key, key % 7)
    blob = whole.snapshot_copy("t").encode()
    halves = [TimerService((0, 63), 128), TimerService((64, 127), 128)]
    for half in halves:
        half.restore([blob])
    fired = [t for half in halves for t in half.pop_due(Domain.EVENT_TIME, 10)]
    assert sorted(t.key for t in fired) == list(range(200))
    assert all(len(h) == 0 for h in halves) and len(halves[0].pop_due(Domain.EVENT_TIME, 99)) == 0
