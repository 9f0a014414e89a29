"""One chaos run: start the cluster, put proxies in front, run workload and nemesis, check.

The run writes into ``out_dir``, which must be new or empty: ``cluster.yaml``
and ``data/`` (the cluster under test, ``cluster_file``), ``schedule.json``,
``history.jsonl``, ``result.json``, ``summary.txt``, ``cluster.log`` and
``audit/`` (the observer's snapshots as audit input, and after a completed run
the audit's ``audit-report.json`` and ``.html``, unless ``audit`` is off). Whatever happens
(a failed check, an exception, Ctrl-C or SIGTERM) the cluster is shut down,
the proxies and clients are closed, and the processes of the run are checked
and reaped before ``run_chaos`` returns.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cluster.audit.reader import ClusterReader, Kind, ReadLimits
from cluster.audit.rows import BoundInputs
from cluster.chaos.all_checks import run_checks
from cluster.chaos.audit import AUDIT_DIR, AuditInput, AuditJob, job_process, run_audit
from cluster.chaos.checkers import CheckConfig, CheckResult, HistoryView
from cluster.chaos.cluster_file import planned_cluster, write_run_cluster
from cluster.chaos.cluster_proc import ClusterProcess, ProcessTracker
from cluster.chaos.faults import FAULTS, FaultContext
from cluster.chaos.history import NEMESIS, RUNNER, HistoryWriter
from cluster.chaos.load.checks import load_report, report_lines
from cluster.chaos.load.plan import LoadPlan
from cluster.chaos.load.run import LoadProcess
from cluster.chaos.proxy import ProxyHost, ProxySpec
from cluster.chaos.report_html import write_report
from cluster.chaos.schedule import FaultEvent, Schedule, Timing, TooShort, build_schedule
from cluster.chaos.workload import Workload, WorkloadOptions
from cluster.core.clock import wall_ms
from cluster.core.config import ClusterConfig, load_cluster
from cluster.core.errors import UserError
from supervisor.control_client import ControlClient

PROGRESS_EVERY_S = 10.0
SAMPLE_EVERY_S = 1.0
PROXY_CONNECTIONS = 256  # per proxy, besides the load's brokers and clients


@dataclass(frozen=True)
class ChaosOptions:
    scenario: str
    seed: int
    duration_s: float
    out_dir: Path
    config: str | None = None  # the cluster file to test; None: a cluster of the run's own
    brokers: int = 2
    margin_s: float | None = None
    echo: Callable[[str], None] = print
    timing: Timing | None = None
    audit: bool = True
    load: LoadPlan | None = None
    audit_job: AuditJob = job_process  # how the audit's ``pynamesrv audit run`` is run


@dataclass
class ChaosReport:
    schedule: Schedule
    results: list[CheckResult]
    out_dir: Path
    interrupted: bool = False
    error: str | None = None
    load: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.interrupted and self.error is None and all(r.ok for r in self.results)


def timing_for(cfg: ClusterConfig, margin_s: float | None = None) -> Timing:
    """Protocol timing implied by cluster.yaml (heartbeat, scan, expiry) plus a margin."""
    hb = cfg.broker_heartbeat_ms / 1000
    margin = margin_s if margin_s is not None else max(2.0, hb / 4)
    restart = cfg.supervisor.backoff_initial_ms / 1000 + 3.0
    return Timing(heartbeat_s=hb, scan_s=cfg.scan_interval_ms / 1000,
                  expiry_s=cfg.expiry_ms / 1000, margin_s=margin, restart_s=restart)


def bound_inputs(timing: Timing) -> BoundInputs:
    """The audit's convergence bound inputs (ms) from the run's protocol timing."""
    return BoundInputs(heartbeat_period_ms=round(timing.heartbeat_s * 1000),
                       scan_interval_ms=round(timing.scan_s * 1000),
                       expiry_ms=round(timing.expiry_s * 1000))


def load_ready_timeout(plan: LoadPlan) -> float:
    """How long every load broker may take to be registered on every node."""
    return 60.0 + 2 * plan.heartbeat_s


def client_timeout(timing: Timing) -> float:
    return max(1.0, min(3.0, timing.heartbeat_s))


class Interrupts:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt in the main thread, so cleanup runs the same
    way, and are remembered: ``check`` raises again, so an interrupt is never lost even when
    it lands in code that swallows it (a finalizer run by the garbage collector)."""

    def __init__(self) -> None:
        self.seen = False  # a flag, not a lock-based Event: set from a signal handler

    @contextlib.contextmanager
    def raising(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(_signum: int, _frame: Any) -> None:
            self.seen = True
            raise KeyboardInterrupt
        old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, was in old.items():
                signal.signal(sig, was)

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt


def plan_schedule(opts: ChaosOptions, cfg: ClusterConfig) -> tuple[Schedule, Timing]:
    """The run's schedule and timing for ``cfg``; UserError when the duration is too short."""
    timing = opts.timing or timing_for(cfg, opts.margin_s)
    brokers = [f"chaos-broker-{i}" for i in range(opts.brokers)]
    try:
        schedule = build_schedule(opts.scenario, opts.seed, [n.name for n in cfg.nodes],
                                  brokers, opts.duration_s, timing)
    except TooShort as exc:
        raise UserError(str(exc)) from None
    return schedule, timing


def fresh_out_dir(out_dir: Path) -> None:
    """Create ``out_dir``; refuse one that holds anything (a run starts from nothing)."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UserError(f"{out_dir} is not empty; give a new --out (a run starts from "
                        "empty data)")
    out_dir.mkdir(parents=True, exist_ok=True)


class ChaosRun:
    def __init__(self, opts: ChaosOptions) -> None:
        self.opts = opts
        self.echo = opts.echo
        self.schedule, self.timing = plan_schedule(opts, planned_cluster(opts.config))
        fresh_out_dir(opts.out_dir)
        self.cfg = load_cluster(write_run_cluster(opts.out_dir, opts.config), for_start=True)
        self.nodes = [n.name for n in self.cfg.nodes]
        self.node_addrs = {n.name: n.addr for n in self.cfg.nodes}
        self.brokers = [f"chaos-broker-{i}" for i in range(opts.brokers)]
        self.cluster = ClusterProcess(self.cfg, opts.out_dir / "cluster.log")
        self.tracker = ProcessTracker()
        self.control = ControlClient(self.cfg.control, 5.0)
        self.probe = ClusterReader(self.node_addrs, ReadLimits(timeout_s=2.0, force=Kind.SNAPSHOT))
        self.proxies: ProxyHost | None = None
        self.workload: Workload | None = None
        self.history: HistoryWriter | None = None
        self.audit_input: AuditInput | None = None
        self.fault_end_ms: int | None = None
        self.ctx: FaultContext | None = None
        self.active: dict[int, FaultEvent] = {}
        self.load: LoadProcess | None = None
        self.client_addrs: dict[str, str] = {}
        self.load_report: dict[str, Any] | None = None
        self.t0 = 0.0  # history time the schedule starts at (after the load is ready)
        self._next_sample = 0.0
        self._next_progress = PROGRESS_EVERY_S
        self.interrupts = Interrupts()

    # ------------------------------------------------------------------ run

    def run(self) -> ChaosReport:
        self._write_json("schedule.json", self.schedule.as_dict())
        self.echo(f"chaos: scenario={self.schedule.scenario} seed={self.opts.seed} "
                  f"schedule={self.schedule.fingerprint()} duration={self.opts.duration_s:g}s "
                  f"out={self.opts.out_dir}")
        own = "its own" if self.opts.config is None else f"from {self.opts.config}"
        self.echo(f"chaos: cluster {self.cfg.path} ({own}): "
                  + " ".join(f"{n}={a}" for n, a in self.node_addrs.items())
                  + f", heartbeat {self.timing.heartbeat_s:g}s, expiry {self.timing.expiry_s:g}s")
        for line in self.schedule.describe():
            self.echo(f"  plan {line}")
        for line in [] if self.opts.load is None else self.opts.load.describe():
            self.echo(f"  load {line}")
        report = ChaosReport(self.schedule, [], self.opts.out_dir)
        try:
            with self.interrupts.raising():
                self._execute()
                self.interrupts.check()
        except KeyboardInterrupt:
            report.interrupted = True
            self.echo("chaos: interrupted, cleaning up")
        except Exception as exc:
            report.error = f"{type(exc).__name__}: {exc}"
            self.echo(f"chaos: error: {report.error}")
        finally:
            with self.interrupts.raising():
                try:
                    self._cleanup()
                    self._audit(report)
                    self._record_load_report()
                finally:
                    self._close_history()
        return self._finish(report)

    def _execute(self) -> None:
        self.cluster.start()
        self.tracker.sample(self.cluster.pid)
        wait_s = self.cfg.supervisor.readiness_timeout_s + 30
        took = self.cluster.wait_ready(self.control, self._answers, wait_s)
        self.tracker.sample(self.cluster.pid)
        self.echo(f"chaos: cluster ready in {took:.1f}s ({', '.join(self.nodes)})")
        self._start_harness()
        self._start_load()
        self._run_schedule()
        healed_at = self.history.now() if self.history is not None else 0.0
        end = max(self.t0 + self.opts.duration_s, healed_at + self.timing.settle_s)
        self._wait_until(end)
        assert self.workload is not None
        self.workload.read_kv_all()

    def _answers(self, node: str) -> bool:
        with contextlib.suppress(Exception):
            self.probe.read_node(node)
            return True
        return False

    def _start_harness(self) -> None:
        specs = [ProxySpec(n.name, (n.host, n.port)) for n in self.cfg.nodes]
        load = self.opts.load
        extra = 0 if load is None else load.broker_count + load.clients
        self.proxies = ProxyHost(specs, seed=self.opts.seed,
                                 max_connections=PROXY_CONNECTIONS + extra)
        ports = self.proxies.start()
        client_addrs = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
        self.history = HistoryWriter(self.opts.out_dir / "history.jsonl", time.monotonic)
        self.history.record(RUNNER, "start", None, "info", {
            "nodes": self.nodes, "brokers": self.brokers, "timing": self.timing.as_dict(),
            "scenario": self.schedule.scenario, "seed": self.opts.seed,
            "fingerprint": self.schedule.fingerprint(), "client_addrs": client_addrs,
            "planned": len(self.schedule.events),
            "node_addrs": self.node_addrs, "check": {"grace_s": self._grace_s()}})
        opts = WorkloadOptions(brokers=len(self.brokers), heartbeat_s=self.timing.heartbeat_s,
                               timeout_s=client_timeout(self.timing), seed=self.opts.seed,
                               load=load)
        self.audit_input = AuditInput(self.opts.out_dir / AUDIT_DIR, self.node_addrs,
                                      opts.observe_interval_s, bound_inputs(self.timing))
        self.workload = Workload(self.history, client_addrs, self.node_addrs, opts,
                                 self.audit_input)
        self.ctx = FaultContext(self.control, self.proxies, self.workload, self.node_addrs,
                                self.probe, float(self.cfg.supervisor.readiness_timeout_s))
        self.workload.start()
        self.client_addrs = client_addrs

    def _start_load(self) -> None:
        """The load process; the schedule starts once every load broker is registered."""
        plan = self.opts.load
        if plan is None:
            return
        assert self.history is not None
        ready_s = load_ready_timeout(plan)
        run_s = ready_s + self.opts.duration_s + self.timing.settle_s
        self.history.record(RUNNER, "load", None, "info", {"plan": plan.as_dict()})
        self.load = LoadProcess(self.opts.out_dir, plan, self.client_addrs, self.history,
                                run_s, self.opts.seed)
        self.load.start()
        assert self.load.pid is not None
        self.tracker.sample(self.load.pid)
        ready = self.load.wait_ready(ready_s)
        self.t0 = self.history.now()
        self.echo(f"[{self.t0:7.2f}s] load ready: {ready.get('registered')}/"
                  f"{ready.get('needed')} registrations in {ready.get('took_s')}s, reads "
                  f"started; the schedule starts now")

    # ------------------------------------------------------------- nemesis

    def _actions(self) -> list[tuple[float, int, int, str]]:
        out = []
        for idx, e in enumerate(self.schedule.events):
            out.append((e.at, 1, idx, "apply"))
            if e.undo_at is not None:
                out.append((e.undo_at, 0, idx, "undo"))
        return sorted(out)

    def _run_schedule(self) -> None:
        for at, _, idx, phase in self._actions():
            self._wait_until(self.t0 + at)
            event = self.schedule.events[idx]
            if phase == "apply":
                self._apply(idx, event)
            elif idx in self.active:
                self._undo(idx, event)

    def _step(self, idx: int, e: FaultEvent, phase: str,
              fn: Callable[..., dict[str, Any]]) -> bool:
        assert self.history is not None and self.ctx is not None
        start = self.history.now()
        base = {"phase": phase, "event": idx, "params": e.params, "scheduled": e.at
                if phase == "apply" else e.undo_at}
        try:
            value, ok = {**base, **fn(self.ctx, e)}, True
        except Exception as exc:
            value, ok = {**base, "error": f"{type(exc).__name__}: {exc}"}, False
        rec = self.history.record(NEMESIS, e.fault, e.target, "ok" if ok else "fail",
                                  value, start)
        self.fault_end_ms = wall_ms()
        shown = {k: v for k, v in value.items() if k not in ("phase", "event", "params")}
        self.echo(f"[{rec.t:7.2f}s] {phase:<5} {e.fault:<17} {e.target:<15} "
                  f"{'ok' if ok else 'FAILED'} {orjson.dumps(shown).decode()}")
        return ok

    def _apply(self, idx: int, e: FaultEvent) -> None:
        apply, undo = FAULTS[e.fault]
        ok = self._step(idx, e, "apply", apply)
        if ok and undo is not None:
            self.active[idx] = e
        elif undo is not None:
            assert self.history is not None
            self.history.record(NEMESIS, e.fault, e.target, "info",
                                {"phase": "undo", "event": idx, "skipped": "apply failed"})

    def _undo(self, idx: int, e: FaultEvent) -> None:
        undo = FAULTS[e.fault][1]
        assert undo is not None
        self._step(idx, e, "undo", undo)
        self.active.pop(idx, None)

    def _wait_until(self, t: float) -> None:
        assert self.history is not None
        while (left := t - self.history.now()) > 0:
            self.interrupts.check()
            self._housekeeping()
            time.sleep(min(left, SAMPLE_EVERY_S))
        self._housekeeping()

    def _housekeeping(self) -> None:
        assert self.history is not None
        now = self.history.now()
        if now >= self._next_sample:
            self.tracker.sample(self.cluster.pid)
            if self.load is not None and self.load.pid is not None:
                self.tracker.sample(self.load.pid)
            self._next_sample = now + SAMPLE_EVERY_S
        if now >= self._next_progress:
            counts = " ".join(f"{k}={v}" for k, v in self.history.outcomes.items())
            self.echo(f"[{now:7.2f}s] history {self.history.count} records: {counts}")
            self._next_progress = now + PROGRESS_EVERY_S

    # ------------------------------------------------------------- cleanup

    def _cleanup(self) -> None:
        self._heal_paused()
        if self.workload is not None:
            self.workload.stop()
        if self.load is not None:  # after the workload: its brokers' disconnects go unrecorded
            self.echo(f"chaos: load process {self.load.stop()}")
        if self.audit_input is not None:
            self.audit_input.close(self.fault_end_ms)
        if self.proxies is not None:
            self.proxies.close()
        if not self.cluster.exited():
            self.tracker.sample(self.cluster.pid)
        how = self.cluster.shutdown(self.control, self.cfg.supervisor.stop_grace_s + 10.0)
        self.probe.close()
        self.control.close()
        left = self.tracker.wait_gone(5.0)
        self.tracker.kill_survivors()
        if self.history is not None:
            self.history.record(RUNNER, "orphans", None, "info", {
                "alive": left, "checked": len(self.tracker.seen), "shutdown": how})
        self.echo(f"chaos: cluster {how}; {len(self.tracker.seen)} processes tracked, "
                  f"{len(left)} left behind")

    def _record_load_report(self) -> None:
        """The achieved load, as the history's ``load_report`` record (and for the report)."""
        if self.history is None or self.opts.load is None:
            return
        self.load_report = load_report(HistoryView(self.history.records()))
        self.history.record(RUNNER, "load_report", None, "info", self.load_report)

    def _close_history(self) -> None:
        if self.history is not None:
            self.history.close()

    def _audit(self, report: ChaosReport) -> None:
        """The consistency audit over the observer's snapshots, as one ``audit`` record."""
        if (not self.opts.audit or self.history is None or self.audit_input is None
                or report.interrupted or report.error is not None):
            return
        self.echo(f"chaos: audit of {self.audit_input.rounds} observer rounds "
                  f"in {self.audit_input.out_dir}")
        start = self.history.now()
        try:
            outcome, value = run_audit(self.audit_input.out_dir, job=self.opts.audit_job)
        except KeyboardInterrupt:
            report.interrupted = True
            self.history.record(RUNNER, "audit", None, "fail", {"error": "interrupted"}, start)
            self.echo("chaos: audit interrupted")
            return
        self.history.record(RUNNER, "audit", None, outcome, value, start)
        self.echo(f"chaos: audit {outcome}: {value.get('summary') or value.get('error')}"
                  + (f" (report {value['html']})" if "html" in value else ""))

    def _heal_paused(self) -> None:
        for e in self.active.values():
            if e.fault == "pause_node":
                with contextlib.suppress(Exception):
                    self.control.resume(e.target)

    # -------------------------------------------------------------- report

    def _finish(self, report: ChaosReport) -> ChaosReport:
        if self.history is not None:
            cfg = CheckConfig(timing=self.timing, grace_s=self._grace_s())
            report.results = run_checks(self.history.records(), cfg)
            report.load = self.load_report
        self._write_json("result.json", result_document(report, self.opts))
        write_report(self.opts.out_dir)
        text = summary_text(report, self.opts)
        (self.opts.out_dir / "summary.txt").write_text(text, encoding="utf-8")
        self.echo(text.rstrip("\n"))
        return report

    def _grace_s(self) -> float:
        return client_timeout(self.timing) + self.timing.margin_s

    def _write_json(self, name: str, doc: Any) -> None:
        (self.opts.out_dir / name).write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def result_document(report: ChaosReport, opts: ChaosOptions) -> dict[str, Any]:
    return {"scenario": report.schedule.scenario, "seed": opts.seed,
            "fingerprint": report.schedule.fingerprint(), "duration_s": opts.duration_s,
            "ok": report.ok, "interrupted": report.interrupted, "error": report.error,
            "checks": [r.as_dict() for r in report.results], "load": report.load,
            "schedule": report.schedule.as_dict(), "history": "history.jsonl"}


def summary_text(report: ChaosReport, opts: ChaosOptions) -> str:
    s = report.schedule
    applied = next((r for r in report.results if r.name == "faults_applied"), None)
    lines = [f"chaos run: scenario={s.scenario} seed={opts.seed} schedule={s.fingerprint()} "
             f"duration={opts.duration_s:g}s faults={len(s.events)}"
             + ("" if applied is None else f" ({applied.summary})")]
    if report.interrupted:
        lines.append("INTERRUPTED: the run did not complete")
    if report.error:
        lines.append(f"ERROR: {report.error}")
    if report.load is not None:
        lines += report_lines(report.load)
    for r in report.results:
        tag = "SKIP" if r.skipped else ("PASS" if r.ok else "FAIL")
        lines.append(f"{tag} {r.kind:<8} {r.name:<26} {r.summary}")
        if not r.ok:
            lines += [f"       evidence: {orjson.dumps(ev).decode()[:400]}" for ev in r.evidence]
    given = "" if opts.config is None else f" -c {opts.config}"
    lines.append(f"RESULT: {'PASS' if report.ok else 'FAIL'} (replay: --scenario {s.scenario} "
                 f"--seed {opts.seed} --duration {opts.duration_s:g}s{given})")
    return "\n".join(lines) + "\n"


def run_chaos(opts: ChaosOptions) -> ChaosReport:
    return ChaosRun(opts).run()


