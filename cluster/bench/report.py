"""One printed line per measured (workload, target)."""

from __future__ import annotations

from typing import Any

SIDES = (("route", "route"), ("register", "register"), ("heartbeat", "heartbeat"),
         ("setup", "setup"))


def _side(name: str, s: dict[str, Any]) -> str:
    rate = s.get("rate") or 0
    codes = s.get("codes") or {}
    bad = {k: v for k, v in codes.items() if k != "0"}
    text = (f"{name} {rate:>10,.0f}/s p50 {s['p50_ms']} ms p99 {s['p99_ms']} ms "
            f"p999 {s['p999_ms']} ms")
    return text + (f" codes {bad}" if bad else "")


def _restart(rs: dict[str, Any]) -> str:
    serve = rs.get("serve_s")
    whole = f"serves again after {serve} s" if serve is not None else (
        f"not whole within {rs.get('timeout_s')} s")
    return f"restart: {whole} (stop {rs.get('stop_s')} s, boot {rs.get('boot_s')} s)"


def row_line(r: dict[str, Any]) -> str:
    parts = [f"{r['workload']:<16} {r['target']:<14}"]
    parts += [_side(label, r[side]) for side, label in SIDES if side in r]
    if "server_cpu_util" in r:
        parts.append(f"server cpu {r['server_cpu_util']:.2f} peak pss {r['server_peak_pss_mb']} MB")
    if "restart" in r:
        parts.append(_restart(r["restart"]))
    parts.append(f"client cpu {r.get('client_cpu')} errors {r.get('errors')}")
    return " | ".join(parts)
