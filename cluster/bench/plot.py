"""How cost grows: whole-server memory and route p99 against topics x brokers (the topic
configs the layout's brokers register), one line per target, median over the rounds; a
PNG written with matplotlib (the ``bench`` extra)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from cluster.core.errors import UserError


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("--plot needs matplotlib: .venv/bin/pip install -e '.[bench]'") from None


def points(results: list[dict[str, Any]]) -> dict[str, list[tuple[float, float, float, str]]]:
    """Per target: (topic configs, median peak PSS MB, median route p99 ms, workload), for
    the route-lookup workloads (code 105) with a broker layout, sorted by topic configs."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        raw = r.get("raw") or {}
        if (r.get("layout") and r.get("route", {}).get("p99_ms")
                and raw.get("route", {}).get("code", 105) == 105):
            runs[(r["target"], r["workload"])].append(r)
    out: dict[str, list[tuple[float, float, float, str]]] = defaultdict(list)
    for (target, workload), rs in runs.items():
        x = float(rs[0]["layout"]["topic_configs"])
        pss = statistics.median(float(r.get("server_peak_pss_mb") or 0) for r in rs)
        p99 = statistics.median(float(r["route"]["p99_ms"]) for r in rs)
        out[target].append((x, pss, p99, workload))
    return {t: sorted(v) for t, v in sorted(out.items())}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (mem, lat) = plt.subplots(1, 2, figsize=(12, 4.8))
    for target, pts in points(results).items():
        xs = [p[0] for p in pts]
        mem.plot(xs, [p[1] for p in pts], marker="o", label=target)
        lat.plot(xs, [p[2] for p in pts], marker="o", label=target)
    for ax, title, unit in ((mem, "whole-server memory (peak PSS)", "MB"),
                            (lat, "route lookup p99 while brokers register", "ms")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("topics x brokers (topic configs registered)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    mem.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
