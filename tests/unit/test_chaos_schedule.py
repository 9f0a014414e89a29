"""Fault schedules: deterministic from the seed, well-formed for every scenario."""

from __future__ import annotations

import pytest

from cluster.chaos.schedule import (
    ALL_FAULTS,
    BROKER_FAULTS,
    NODE_FAULTS,
    SCENARIOS,
    FaultEvent,
    Schedule,
    Timing,
    build_schedule,
)

NODES = ("n1", "n2", "n3")
BROKERS = ("broker-a", "broker-b")
FAST = Timing(heartbeat_s=2, scan_s=1, expiry_s=6, margin_s=2, restart_s=3)


def build(scenario: str, seed: int = 1, duration: float = 60.0) -> Schedule:
    return build_schedule(scenario, seed, NODES, BROKERS, duration, FAST)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_seed_same_schedule(scenario: str) -> None:
    a, b = build(scenario, 42), build(scenario, 42)
    assert a == b
    assert a.fingerprint() == b.fingerprint()
    assert a.events, f"{scenario} scheduled nothing in 60 s"


def test_different_seeds_differ_for_random() -> None:
    prints = {build("random", seed).fingerprint() for seed in range(10)}
    assert len(prints) == 10


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_schedule_is_well_formed(scenario: str, seed: int) -> None:
    s = build(scenario, seed)
    for e in s.events:
        assert e.fault in ALL_FAULTS
        assert e.target in (BROKERS if e.fault in BROKER_FAULTS else NODES)
        assert FAST.margin_s <= e.at
        assert e.end <= s.duration_s - FAST.settle_s
        assert e.undo_at is None or e.undo_at > e.at
    assert s.last_heal + FAST.settle_s <= s.duration_s


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 3, 99])
def test_at_most_one_node_faulted_at_a_time(scenario: str, seed: int) -> None:
    node_events = [e for e in build(scenario, seed).events if e.fault in NODE_FAULTS]
    for prev, nxt in zip(node_events, node_events[1:], strict=False):
        assert prev.end <= nxt.at


@pytest.mark.parametrize("seed", [0, 5])
def test_broker_crash_lasts_long_enough_to_observe_expiry(seed: int) -> None:
    crashes = [e for e in build("broker-crash", seed).events if e.fault == "broker_crash"]
    assert crashes
    for e in crashes:
        assert e.end - e.at >= FAST.expire_within_s


def test_kill_restart_kills_each_node_once() -> None:
    events = build("kill-restart", duration=120).events
    assert [e.target for e in events] == list(NODES)
    assert {e.fault for e in events} == {"kill_node"}


def test_flapping_targets_one_node() -> None:
    events = build("flapping-node", 9).events
    assert len(events) >= 3
    assert len({e.target for e in events}) == 1


def test_hostile_events_carry_their_own_seed() -> None:
    events = [e for e in build("hostile-client", 4).events if e.fault == "hostile_client"]
    assert events
    assert all(e.undo_at is None and "seed" in e.params for e in events)


def test_short_duration_schedules_nothing_that_does_not_fit() -> None:
    s = build_schedule("random", 1, NODES, BROKERS, 10, Timing())
    assert all(e.fault in ALL_FAULTS and e.end <= 10 for e in s.events)


def test_unknown_scenario_and_empty_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        build_schedule("nope", 1, NODES, BROKERS, 60, FAST)
    with pytest.raises(ValueError):
        build_schedule("random", 1, (), BROKERS, 60, FAST)


def test_event_dict_round_trip_and_description() -> None:
    s = build("mixed", 2)
    assert tuple(FaultEvent.from_dict(e.as_dict()) for e in s.events) == s.events
    lines = s.describe()
    assert len(lines) == len(s.events)
    assert all(e.fault in line for e, line in zip(s.events, lines, strict=True))
