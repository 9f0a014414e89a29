"""The benchmark workloads: rmqload command lines, the same for every target.

The production shapes (``-w shapes``) register a large broker layout, read while the
brokers keep registering, and then measure the time to serve again after a restart of
the server (``restart``): brokers keep registering on their schedule, reconnecting as a
broker does, and a sample of the layout's topics is asked until every route is whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Workload:
    name: str
    mode: str
    args: tuple[str, ...]
    restart: bool = False  # also measure the time to serve again after a restart
    about: str = ""


# Brokers register as 5.x brokers do: the Rust NameServer 1.0.0 refuses a 4.9 broker's
# body (code 29, "Request body is invalid": it wants stateVersion, mappingDataVersion,
# TopicConfig attributes and the mapping tables); both Java releases take either.
V5 = ("--body-5x",)


def _hb(*args: str) -> tuple[str, ...]:
    """A shape's brokers: heartbeats every 30 s (a broker's registerNameServerPeriod), 16
    first registrations in flight at a time while the layout is set up."""
    return (*args, *V5, "--heartbeat", "30s", "--reg-conc", "16")


C_LAYOUT = _hb("-B", "1000", "-T", "400", "--width", "4")  # the Rust NameServer's fixture
D_LAYOUT = _hb("-B", "1", "-T", "70000", "--rand-prefix", "48")

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("route", "route", ("-B", "10", "-T", "100", *V5, "-c", "32", "-D", "8")),
    Workload("route-shared", "route", ("-B", "10", "-T", "100", "--shared", *V5, "-c", "32",
                                       "-D", "8")),
    Workload("route-latency", "route", ("-B", "10", "-T", "100", *V5, "-c", "4", "-D", "1")),
    Workload("register-bump", "register", ("-T", "10000", "--bump", *V5)),
    Workload("register-nobump", "register", ("-T", "10000", "--no-bump", *V5)),
    Workload("mixed-reads", "route", ("-C", "4", "-B", "8", "-T", "10000", "--shared",
                                      "--rand-prefix", "32", *V5, "-c", "32", "-D", "8")),
    Workload("mixed", "mixed", V5),
    Workload("mixed-rate10", "mixed", ("--reg-rate", "10", *V5)),
    # the production shapes
    Workload("a-300-brokers", "route",
             _hb("-B", "150", "--slaves", "1", "-T", "10000", "--shared", "-c", "32", "-D", "8"),
             restart=True, about="150 master/slave pairs (300 brokers), 10,000 topics on "
                                 "every master, 30 s heartbeats, route reads 32x8"),
    Workload("b-storm", "mixed", V5, restart=True,
             about="4 clusters x 8 brokers x 10,000 topics re-registering every 0-100 ms, "
                   "route reads 32x8"),
    Workload("b-storm-4x1", "mixed", (*V5, "-c", "4", "-D", "1"), restart=True,
             about="the same storm, route reads 4x1"),
    Workload("c-1000-brokers", "route", (*C_LAYOUT, "-c", "32", "-D", "8"), restart=True,
             about="1,000 brokers, 100,000 topics each on 4 brokers, 30 s heartbeats, "
                   "route reads 32x8"),
    Workload("d-70k-topics", "route", (*D_LAYOUT, "-c", "32", "-D", "8"), restart=True,
             about="one 5.x broker with 70,000 topics in one registration over 16 MiB"),
    Workload("d-70k-split", "route", (*D_LAYOUT, "--split", "800", "-c", "32", "-D", "8"),
             restart=True, about="the same broker with 5.x enableSplitRegistration (800 "
                                 "topics a request)"),
    Workload("e-all-topics", "route", (*C_LAYOUT, "--code", "206", "-c", "4", "-D", "1"),
             restart=True, about="GET_ALL_TOPIC_LIST_FROM_NAMESERVER at 100,000 topics, 4x1"),
    Workload("e-cluster-topics", "route", (*C_LAYOUT, "--code", "224", "-c", "4", "-D", "1"),
             restart=True, about="GET_TOPICS_BY_CLUSTER at 100,000 topics, 4x1"),
)}

DEFAULT = ("route", "route-latency", "register-bump", "register-nobump", "mixed-rate10")
GROUPS = {"shapes": ("route", "route-latency", "a-300-brokers", "b-storm", "b-storm-4x1",
                     "c-1000-brokers", "d-70k-topics", "d-70k-split", "e-all-topics",
                     "e-cluster-topics")}


def expand(names: list[str]) -> list[str]:
    """Workload names with the groups (``shapes``) replaced by their members, in order."""
    out: list[str] = []
    for name in names:
        for member in GROUPS.get(name, (name,)):
            if member not in out:
                out.append(member)
    return out


def summary(result: dict[str, Any]) -> dict[str, object]:
    """The figures worth a table row from one rmqload JSON result."""
    out: dict[str, object] = {}
    for side in ("route", "register"):
        part = result.get(side)
        if not part:
            continue
        rate = part.get("rps") if side == "route" else part.get("regs_per_s")
        # a route workload's brokers register on their heartbeat schedule: not a capacity
        name = "heartbeat" if side == "register" and result.get("mode") == "route" else side
        if name != "heartbeat" or part.get("responses"):
            out[name] = _figures(rate, part.get("lat_us", {}), part.get("codes", {}))
        setup = part.get("setup")
        if side == "register" and setup and setup.get("registrations"):
            out["setup"] = _figures(setup.get("regs_per_s"), setup.get("lat_us", {}),
                                    setup.get("codes", {}))
    reg = result.get("register") or {}
    if reg.get("topic_configs"):
        out["layout"] = {k: reg.get(k) for k in ("brokers", "names", "topics",
                                                 "topics_per_broker", "topic_configs",
                                                 "requests_per_registration", "body_bytes_max")}
    out["errors"] = result.get("errors")
    out["client_cpu"] = result.get("client", {}).get("cpu_util")
    out["machine_busy_cores"] = result.get("machine", {}).get("busy_cores")
    return out


def _figures(rate: float | None, lat: dict[str, Any], codes: dict[str, Any]) -> dict[str, object]:
    return {"rate": rate, "p50_ms": _ms(lat.get("p50")), "p99_ms": _ms(lat.get("p99")),
            "p999_ms": _ms(lat.get("p999")), "codes": codes}


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000, 3)
