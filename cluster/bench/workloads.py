"""The benchmark workloads: rmqload command lines matching the Java NameServer baseline."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    name: str
    mode: str
    args: tuple[str, ...]
    java_4_9_7: str  # the Java NameServer 4.9.7 figure on this kind of machine (issue table)


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("route", "route", ("-B", "10", "-T", "100", "-c", "32", "-D", "8"),
             "63,000 req/s (30 s warm-up; 40,000 after 3 s), p99 9.1 ms"),
    Workload("route-shared", "route", ("-B", "10", "-T", "100", "--shared", "-c", "32", "-D", "8"),
             "57,000 req/s, p99 11 ms"),
    Workload("route-latency", "route", ("-B", "10", "-T", "100", "-c", "4", "-D", "1"),
             "14,000 req/s, p99 1.9 ms"),
    Workload("register-bump", "register", ("-T", "10000", "--bump"), "107 regs/s, p99 19 ms"),
    Workload("register-nobump", "register", ("-T", "10000", "--no-bump"),
             "146 regs/s, p99 16 ms"),
    Workload("mixed-reads", "route", ("-C", "4", "-B", "8", "-T", "10000", "--shared",
                                      "--rand-prefix", "32", "-c", "32", "-D", "8"),
             "not measured (the mixed layout's reads without the registration storm)"),
    Workload("mixed", "mixed", (), "reads ~600 req/s (p99 0.56 s), 63 regs/s"),
    Workload("mixed-rate10", "mixed", ("--reg-rate", "10"), "reads 22,000 req/s, p99 39 ms"),
)}

DEFAULT = ("route", "route-latency", "register-bump", "register-nobump", "mixed-rate10")


def summary(result: dict) -> dict[str, object]:
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
