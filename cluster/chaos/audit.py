"""The consistency audit of a chaos run: the observer's snapshots as audit input, then the job.

``AuditInput`` turns each observer round (one ``Observed`` per node) into the
row files and ``manifest.json`` that ``pynamesrv audit collect`` writes, in
the run's ``audit/`` directory. ``run_audit`` runs ``pynamesrv audit run`` on
it in a child process of its own session (Spark's JVM stays out of the
harness) and turns the verdict into the outcome and value of the ``audit``
history record. Another ``AuditJob`` may run the same command, e.g. on a Spark
session kept between runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cluster.audit.collector import CollectionWriter, RoundResult
from cluster.audit.rows import BoundInputs, Manifest, NodeRef, observed_rows
from cluster.core.clock import wall_ms

AUDIT_DIR = "audit"
REPORT_JSON = "audit-report.json"
REPORT_HTML = "audit-report.html"
AUDIT_TIMEOUT_S = 300.0
GROUP_EXIT_S = 10.0
TAIL_CHARS = 600


@dataclass(slots=True)
class Observed:
    """One node's answer to one observer round: a snapshot body, or why there is none."""

    node: str
    asked_at: int
    snapshot: Mapping[str, Any] | None = None
    error: str | None = None


class AuditInput:
    """Writes observer rounds as an audit collection; ``close`` stamps the manifest."""

    def __init__(self, out_dir: Path, node_addrs: Mapping[str, str], interval_s: float,
                 bound: BoundInputs) -> None:
        manifest = Manifest(nodes=[NodeRef(n, a) for n, a in node_addrs.items()],
                            interval_ms=max(1, round(interval_s * 1000)),
                            bound_inputs=bound, started_at=wall_ms())
        self.out_dir = out_dir
        self._writer = CollectionWriter(out_dir, manifest)

    def add_round(self, round_no: int, observed: Sequence[Observed]) -> bool:
        """Write one complete round; False when the input is already closed."""
        rows = {o.node: observed_rows(o.node, round_no, o.asked_at, o.snapshot, o.error)
                for o in observed}
        return self._writer.write(RoundResult(round_no, rows))

    def close(self, fault_end: int | None) -> Manifest:
        return self._writer.close(fault_end)

    @property
    def rounds(self) -> int:
        return self._writer.manifest.rounds


# Runs ``pynamesrv`` with ``audit_args`` within a timeout (s): (exit code or None on
# timeout, its output).
AuditJob = Callable[[Sequence[str], float], tuple[int | None, str]]


def audit_args(audit_dir: Path) -> list[str]:
    """The ``pynamesrv`` arguments of the audit of ``audit_dir``, its report written there."""
    path = str(audit_dir.resolve())
    return ["audit", "run", path, "--report-dir", path]


def pynamesrv_command(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "cluster.cli", *args]


def _tail(text: str) -> str:
    return text.strip()[-TAIL_CHARS:]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _end_group(pgid: int, within_s: float) -> None:
    """Give what is left of the audit's session (Spark's JVM) a moment, then kill it."""
    deadline = time.monotonic() + within_s
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    _kill_group(pgid)


def job_process(args: Sequence[str], timeout_s: float) -> tuple[int | None, str]:
    """The ``AuditJob`` of a ``pynamesrv`` process of its own: (exit code or None on
    timeout, combined output)."""
    proc = subprocess.Popen(pynamesrv_command(args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        return None, out
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        _end_group(proc.pid, GROUP_EXIT_S)
    return proc.returncode, out


def verdict_value(report_path: Path, code: int) -> tuple[str, dict[str, Any]]:
    """Outcome and value from a written report: ``ok`` exactly when the verdict holds."""
    doc = orjson.loads(report_path.read_bytes())
    v = doc["verdict"]
    holds = bool(v["holds"])
    summary = ("eventually consistent: " if holds else "not eventually consistent: ") + (
        f"{doc['intervals_total']} divergence interval(s), all closed within "
        f"{v['bound_ms'] / 1000:g}s of the fault end" if holds else "; ".join(v["reasons"]))
    value = {"holds": holds, "summary": summary, "report": str(report_path),
             "html": str(report_path.with_name(REPORT_HTML)), "exit": code,
             "rows": doc["rows"], "rounds": len(doc["rounds"]),
             "intervals": doc["intervals_total"], "bound_ms": v["bound_ms"],
             "fault_end": v["fault_end"], "fault_end_source": v["fault_end_source"],
             "late": v["late"][:3], "never_converged": doc["never_converged"][:3]}
    return ("ok" if holds and code == 0 else "fail"), value


def run_audit(audit_dir: Path, timeout_s: float = AUDIT_TIMEOUT_S,
              job: AuditJob = job_process) -> tuple[str, dict[str, Any]]:
    """Run the audit job on ``audit_dir``; any failure to get a verdict is ``fail`` with why."""
    report_path = audit_dir / REPORT_JSON
    report_path.unlink(missing_ok=True)
    started = time.monotonic()
    try:
        code, out = job(audit_args(audit_dir), timeout_s)
    except OSError as exc:
        return "fail", {"error": f"cannot start the audit: {type(exc).__name__}: {exc}"}
    took = round(time.monotonic() - started, 2)
    if code is None:
        return "fail", {"error": f"audit timed out after {timeout_s:g}s", "elapsed_s": took,
                        "output": _tail(out)}
    if code not in (0, 1) or not report_path.is_file():
        return "fail", {"error": f"audit exited with code {code} without a verdict",
                        "exit": code, "elapsed_s": took, "output": _tail(out)}
    try:
        outcome, value = verdict_value(report_path, code)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return "fail", {"error": f"unreadable report {report_path}: {exc}", "exit": code,
                        "elapsed_s": took}
    return outcome, {**value, "elapsed_s": took}
