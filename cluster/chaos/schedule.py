"""Fault schedules as pure data: named scenarios and seeded random schedules.

A schedule is a list of ``FaultEvent(at, fault, target, params, undo_at)`` with
times in seconds from the start of the run. The same (scenario, seed, nodes,
brokers, duration, timing) always gives the same schedule.

Faults run in two lanes so at most one node is faulted at a time (the other
nodes stay healthy) while broker faults overlap node faults. Every fault is
undone before ``duration - settle`` so the run ends with a healed cluster; a
fault's random length is drawn within the room left, so a run holds its
scenario's first fault from ``minimum_duration`` on, and a shorter run is
refused (``TooShort``): a run without faults proves nothing.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

NODE_FAULTS: tuple[str, ...] = (
    "kill_node", "kill_worker", "pause_node", "stop_node",
    "net_slow", "net_lossy", "net_blackhole", "net_cut", "net_reset",
)
BROKER_FAULTS: tuple[str, ...] = ("broker_crash", "broker_unregister")
INSTANT_FAULTS: tuple[str, ...] = ("hostile_client",)
ALL_FAULTS: tuple[str, ...] = NODE_FAULTS + BROKER_FAULTS + INSTANT_FAULTS
HOSTILE_KINDS: tuple[str, ...] = ("garbage", "oversize", "bad_header", "truncated", "slowloris")
EPSILON_S = 1e-6  # a run of exactly the minimum duration holds its first fault


@dataclass(frozen=True, slots=True)
class Timing:
    """Protocol timeouts (seconds) the schedule and the checkers depend on."""

    heartbeat_s: float = 30.0
    scan_s: float = 5.0
    expiry_s: float = 120.0
    margin_s: float = 3.0
    restart_s: float = 5.0

    @property
    def expire_within_s(self) -> float:
        """A crashed broker is gone from a live node within this long."""
        return self.expiry_s + self.scan_s + self.margin_s

    @property
    def recover_within_s(self) -> float:
        """A node back from a fault has every live broker again within this long."""
        return self.heartbeat_s + self.margin_s

    @property
    def converge_s(self) -> float:
        """After the last heal, every node routes to every live broker within this long."""
        return self.recover_within_s + self.scan_s

    @property
    def settle_s(self) -> float:
        """Quiet time a run keeps after its last heal: convergence plus time to observe it."""
        return self.converge_s + self.margin_s

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self.__slots__}


class TooShort(ValueError):
    """The duration leaves no room for the scenario's first fault; ``minimum`` would."""

    def __init__(self, scenario: str, duration_s: float, minimum_s: float, timing: Timing) -> None:
        super().__init__(
            f"scenario {scenario} needs --duration {math.ceil(minimum_s)}s or more with this "
            f"cluster's timing (heartbeat {timing.heartbeat_s:g}s, scan {timing.scan_s:g}s, "
            f"expiry {timing.expiry_s:g}s, margin {timing.margin_s:g}s): its first fault and "
            f"the {timing.settle_s:g}s to settle after the last one do not fit in "
            f"{duration_s:g}s")
        self.minimum_s = minimum_s


@dataclass(frozen=True, slots=True)
class FaultEvent:
    at: float
    fault: str
    target: str
    params: dict[str, Any] = field(default_factory=dict)
    undo_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at, "fault": self.fault, "target": self.target,
                "params": self.params, "undo_at": self.undo_at}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FaultEvent:
        return cls(float(d["at"]), str(d["fault"]), str(d["target"]), dict(d.get("params", {})),
                   None if d.get("undo_at") is None else float(d["undo_at"]))

    @property
    def end(self) -> float:
        return self.at if self.undo_at is None else self.undo_at


@dataclass(frozen=True, slots=True)
class Schedule:
    scenario: str
    seed: int
    duration_s: float
    timing: Timing
    events: tuple[FaultEvent, ...]

    @property
    def last_heal(self) -> float:
        return max((e.end for e in self.events), default=0.0)

    def as_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "seed": self.seed, "duration_s": self.duration_s,
                "timing": self.timing.as_dict(), "events": [e.as_dict() for e in self.events]}

    def fingerprint(self) -> str:
        blob = orjson.dumps(self.as_dict(), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(blob).hexdigest()[:16]

    def describe(self) -> list[str]:
        lines = []
        for e in self.events:
            undo = "" if e.undo_at is None else f" until {e.undo_at:7.2f}s"
            params = "" if not e.params else " " + orjson.dumps(e.params).decode()
            lines.append(f"{e.at:7.2f}s {e.fault:<17} {e.target}{undo}{params}")
        return lines


@dataclass(slots=True)
class _Plan:
    """Mutable state while a scenario lays out its events."""

    rng: random.Random
    nodes: Sequence[str]
    brokers: Sequence[str]
    timing: Timing
    start: float
    end: float
    events: list[FaultEvent] = field(default_factory=list)
    node_free_at: float = 0.0
    broker_free_at: float = 0.0

    def r(self, x: float) -> float:
        return round(x, 3)

    def fits(self, at: float, length: float) -> bool:
        return at + length <= self.end + EPSILON_S

    def node_fault(self, fault: str, target: str, length: float,
                   params: dict[str, Any] | None = None, gap: float | None = None) -> bool:
        at = max(self.start, self.node_free_at)
        if not self.fits(at, length):
            return False
        undo = self.r(at + length)
        self.events.append(FaultEvent(self.r(at), fault, target, params or {}, undo))
        recover = self.timing.recover_within_s if gap is None else gap
        self.node_free_at = undo + recover
        return True

    def broker_fault(self, fault: str, target: str, length: float, at: float | None = None) -> bool:
        at = max(self.start, self.broker_free_at, at or 0.0)
        if not self.fits(at, length):
            return False
        undo = self.r(at + length)
        self.events.append(FaultEvent(self.r(at), fault, target, {}, undo))
        self.broker_free_at = undo + self.timing.recover_within_s
        return True

    def instant(self, fault: str, target: str, at: float, params: dict[str, Any]) -> bool:
        if not self.start <= at <= self.end + EPSILON_S:
            return False
        self.events.append(FaultEvent(self.r(at), fault, target, params, None))
        return True


def length_range(fault: str, t: Timing) -> tuple[float, float]:
    """Shortest and longest length of a node fault (a pause outlasts a heartbeat, ...)."""
    if fault in ("kill_node", "kill_worker"):
        return t.restart_s, t.restart_s
    if fault == "pause_node":
        return t.heartbeat_s, 2 * t.heartbeat_s
    if fault == "stop_node":
        return t.margin_s, t.heartbeat_s + t.margin_s
    return t.heartbeat_s / 2, 2 * t.heartbeat_s


def _node_length(p: _Plan, fault: str) -> float:
    """A random length in the fault's range, cut to the room left in the run when the
    shortest fits (a longer draw would leave the fault out)."""
    lo, hi = length_range(fault, p.timing)
    room = p.end - max(p.start, p.node_free_at)
    return lo if hi <= lo or room <= lo + EPSILON_S else p.rng.uniform(lo, min(hi, room))


def crash_length(t: Timing) -> float:
    """A crashed broker stays down until every live node must have expired it."""
    return t.expire_within_s + t.margin_s


def _node_params(p: _Plan, fault: str) -> dict[str, Any]:
    rng = p.rng
    if fault == "kill_worker":
        return {"role": rng.choice(("io", "business"))}
    if fault == "net_slow":
        return {"latency_ms": rng.choice((50, 100, 200, 400)), "jitter_ms": rng.choice((0, 50))}
    if fault == "net_lossy":
        return {"loss": rng.choice((0.05, 0.2, 0.5)), "retransmit_ms": 200}
    if fault == "net_cut":
        return {"direction": rng.choice(("up", "down"))}
    return {}


def _hostile(p: _Plan, target: str, at: float) -> bool:
    params = {"kind": p.rng.choice(HOSTILE_KINDS), "frames": p.rng.randint(5, 50),
              "seed": p.rng.randrange(2**31)}
    return p.instant("hostile_client", target, at, params)


def _random_node_fault(p: _Plan, fault: str | None = None) -> bool:
    fault = fault or p.rng.choice(NODE_FAULTS)
    return p.node_fault(fault, p.rng.choice(p.nodes), _node_length(p, fault),
                        _node_params(p, fault))


def _scenario_kill_restart(p: _Plan) -> None:
    for node in p.nodes:
        if not p.node_fault("kill_node", node, p.timing.restart_s):
            return


def _scenario_pause_node(p: _Plan) -> None:
    for node in p.rng.sample(list(p.nodes), len(p.nodes)):
        if not p.node_fault("pause_node", node, _node_length(p, "pause_node")):
            return


def _scenario_partition_one_node(p: _Plan) -> None:
    node = p.rng.choice(p.nodes)
    for fault in ("net_blackhole", "net_cut", "net_slow", "net_reset", "net_lossy"):
        if not p.node_fault(fault, node, _node_length(p, fault), _node_params(p, fault)):
            return


def _scenario_broker_crash(p: _Plan) -> None:
    crash_len = crash_length(p.timing)
    for broker in p.rng.sample(list(p.brokers), len(p.brokers)):
        if not p.broker_fault("broker_crash", broker, crash_len):
            break
        p.broker_fault("broker_unregister", p.rng.choice(p.brokers), p.timing.recover_within_s)


def _scenario_flapping_node(p: _Plan) -> None:
    node = p.rng.choice(p.nodes)
    short = max(p.timing.margin_s, 1.0)
    while True:
        fault = p.rng.choice(("kill_node", "pause_node", "stop_node"))
        length = p.timing.restart_s if fault == "kill_node" else short
        if not p.node_fault(fault, node, length, gap=short):
            return


def _scenario_hostile_client(p: _Plan) -> None:
    at = p.start
    step = max(p.timing.margin_s, 1.0)
    while _hostile(p, p.rng.choice(p.nodes), at):
        at += p.rng.uniform(step / 2, step)
    p.node_fault("net_reset", p.rng.choice(p.nodes), p.timing.margin_s)


def _scenario_mixed(p: _Plan) -> None:
    faults = ["kill_node", "pause_node", "net_blackhole", "kill_worker", "net_cut", "stop_node"]
    p.rng.shuffle(faults)
    for fault in faults:
        _random_node_fault(p, fault)
    _scenario_broker_crash(p)
    _hostile(p, p.rng.choice(p.nodes), p.rng.uniform(p.start, p.end))


def _scenario_random(p: _Plan) -> None:
    while _random_node_fault(p):
        pass
    while True:
        fault = p.rng.choice(BROKER_FAULTS)
        length = crash_length(p.timing) if fault == "broker_crash" else p.timing.recover_within_s
        if not p.broker_fault(fault, p.rng.choice(p.brokers), length):
            break
    for _ in range(p.rng.randint(1, 4)):
        _hostile(p, p.rng.choice(p.nodes), p.rng.uniform(p.start, p.end))


SCENARIOS: dict[str, Callable[[_Plan], None]] = {
    "kill-restart": _scenario_kill_restart,
    "pause-node": _scenario_pause_node,
    "partition-one-node": _scenario_partition_one_node,
    "broker-crash": _scenario_broker_crash,
    "flapping-node": _scenario_flapping_node,
    "hostile-client": _scenario_hostile_client,
    "mixed": _scenario_mixed,
    "random": _scenario_random,
}


def _shortest(faults: Sequence[str]) -> Callable[[Timing], float]:
    return lambda t: min(length_range(f, t)[0] for f in faults)


def _longest_shortest(faults: Sequence[str]) -> Callable[[Timing], float]:
    return lambda t: max(length_range(f, t)[0] for f in faults)


# The room the first fault of each scenario needs (its shortest length; the longest of
# those when the first fault is drawn at random).
FIRST_FAULT_ROOM: dict[str, Callable[[Timing], float]] = {
    "kill-restart": _shortest(["kill_node"]),
    "pause-node": _shortest(["pause_node"]),
    "partition-one-node": _shortest(["net_blackhole"]),
    "broker-crash": crash_length,
    "flapping-node": lambda t: max(t.restart_s, t.margin_s, 1.0),
    "hostile-client": lambda t: t.margin_s,
    "mixed": _shortest(["kill_node", "pause_node", "net_blackhole", "kill_worker", "net_cut",
                        "stop_node"]),
    "random": _longest_shortest(NODE_FAULTS),
}


def minimum_duration(scenario: str, timing: Timing) -> float:
    """The shortest run that holds the scenario's first fault: the start margin, the
    fault, and the settle time after it."""
    return timing.margin_s + FIRST_FAULT_ROOM[scenario](timing) + timing.settle_s


def build_schedule(scenario: str, seed: int, nodes: Sequence[str], brokers: Sequence[str],
                   duration_s: float, timing: Timing | None = None) -> Schedule:
    """The fault schedule of ``scenario`` for ``seed``; ValueError on a bad name, TooShort
    when ``duration_s`` is below ``minimum_duration``."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
    if not nodes or not brokers:
        raise ValueError("a schedule needs at least one node and one broker")
    timing = timing or Timing()
    minimum = minimum_duration(scenario, timing)
    if duration_s < minimum:
        raise TooShort(scenario, duration_s, minimum, timing)
    plan = _Plan(random.Random(f"{scenario}:{seed}"), list(nodes), list(brokers), timing,
                 start=timing.margin_s, end=duration_s - timing.settle_s)
    SCENARIOS[scenario](plan)
    events = tuple(sorted(plan.events, key=lambda e: (e.at, e.fault, e.target)))
    return Schedule(scenario, seed, float(duration_s), timing, events)
