"""The benchmark workloads: rmqload command lines, the same for every target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Workload:
    name: str
    mode: str
    args: tuple[str, ...]


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("route", "route", ("-B", "10", "-T", "100", "-c", "32", "-D", "8")),
    Workload("route-shared", "route", ("-B", "10", "-T", "100", "--shared", "-c", "32", "-D",
                                       "8")),
    Workload("route-latency", "route", ("-B", "10", "-T", "100", "-c", "4", "-D", "1")),
    Workload("register-bump", "register", ("-T", "10000", "--bump")),
    Workload("register-nobump", "register", ("-T", "10000", "--no-bump")),
    Workload("mixed-reads", "route", ("-C", "4", "-B", "8", "-T", "10000", "--shared",
                                      "--rand-prefix", "32", "-c", "32", "-D", "8")),
    Workload("mixed", "mixed", ()),
    Workload("mixed-rate10", "mixed", ("--reg-rate", "10")),
)}

DEFAULT = ("route", "route-latency", "register-bump", "register-nobump", "mixed-rate10")


def summary(result: dict[str, Any]) -> dict[str, object]:
    """The figures worth a table row from one rmqload JSON result."""
    out: dict[str, object] = {}
    sides = {"route": ("route",), "register": ("register",)}.get(result.get("mode", ""),
                                                                 ("route", "register"))
    for side in sides:
        part = result.get(side)
        if not part:
            continue
        lat = part.get("lat_us", {})
        rate = part.get("rps") if side == "route" else part.get("regs_per_s")
        out[side] = {"rate": rate, "p50_ms": _ms(lat.get("p50")), "p99_ms": _ms(lat.get("p99")),
                     "p999_ms": _ms(lat.get("p999")), "codes": part.get("codes", {})}
    out["errors"] = result.get("errors")
    out["client_cpu"] = result.get("client", {}).get("cpu_util")
    out["machine_busy_cores"] = result.get("machine", {}).get("busy_cores")
    return out


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000, 3)
