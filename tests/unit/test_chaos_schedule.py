"""Fault schedules: deterministic from the seed, well-formed for every scenario."""

from __future__ import annotations

import math

import pytest

from cluster.chaos.cluster_file import planned_cluster
from cluster.chaos.runner import timing_for
from cluster.chaos.schedule import (
    ALL_FAULTS,
    BROKER_FAULTS,
    NODE_FAULTS,
    SCENARIOS,
    FaultEvent,
    Schedule,
    Timing,
    TooShort,
    build_schedule,
    minimum_duration,
)
from cluster.core.config import REPO_DEFAULT

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


OWN = timing_for(planned_cluster(None))  # the timing of a run's own cluster
SHIPPED = timing_for(planned_cluster(str(REPO_DEFAULT)))  # RocketMQ's: 30 s heartbeat


@pytest.mark.parametrize("timing", [FAST, OWN, SHIPPED, Timing()], ids=str)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_minimum_duration_holds_a_fault_and_less_is_refused(scenario: str,
                                                                timing: Timing) -> None:
    least = minimum_duration(scenario, timing)
    for seed in range(30):
        s = build_schedule(scenario, seed, NODES, BROKERS, least, timing)
        assert s.events, (scenario, seed, least)
        if scenario not in ("hostile-client", "broker-crash"):
            assert any(e.fault in NODE_FAULTS for e in s.events), (scenario, seed)
        assert s.last_heal + timing.settle_s <= least + 1e-6
    with pytest.raises(TooShort, match=f"needs --duration {math.ceil(least)}s or more"):
        build_schedule(scenario, 1, NODES, BROKERS, least - 0.01, timing)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_documented_60s_run_of_the_own_cluster_injects_faults(scenario: str) -> None:
    for seed in (7, *range(20)):
        assert build_schedule(scenario, seed, NODES, BROKERS, 60, OWN).events, (scenario, seed)


def test_a_60s_pause_run_on_the_shipped_timing_is_refused_with_its_minimum() -> None:
    with pytest.raises(TooShort) as info:
        build_schedule("pause-node", 7, NODES, BROKERS, 60, SHIPPED)
    assert info.value.minimum_s == SHIPPED.margin_s + SHIPPED.heartbeat_s + SHIPPED.settle_s
    assert "heartbeat 30s" in str(info.value)


def test_a_long_fault_is_cut_to_the_room_left() -> None:
    """A pause is drawn within [heartbeat, 2 heartbeats] but never past the end."""
    least = minimum_duration("pause-node", FAST)
    for seed in range(30):
        (pause,) = build_schedule("pause-node", seed, NODES, BROKERS, least + 0.5, FAST).events
        assert FAST.heartbeat_s <= pause.end - pause.at <= FAST.heartbeat_s + 0.5 + 1e-6


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
