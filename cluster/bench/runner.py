"""Run benchmark workloads with rmqload against fresh servers, one at a time."""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from cluster.bench import restart
from cluster.bench.sampler import TreeSampler
from cluster.bench.servers import JAVA_HEAP, Server, Target, running
from cluster.bench.workloads import Workload, summary
from cluster.core.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
RMQLOAD_SRC = Path(__file__).resolve().parent / "rmqload"
CACHE = ROOT / ".cache" / "rmqload"
HOLD_S = 600  # brokers registering while the restart is measured, at most
SAMPLE = 100  # topics asked after a restart
RESTART_TIMEOUT_S = 75.0  # two 30 s heartbeat periods and a JVM's start


def _sources() -> list[Path]:
    return sorted(p for p in RMQLOAD_SRC.iterdir() if p.suffix in (".c", ".h"))


def find_rmqload(explicit: str | None) -> Path:
    """An rmqload binary: the given path, or built from cluster/bench/rmqload into .cache
    (one binary per version of its sources)."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise UserError(f"--rmqload {path}: no such file")
        return path
    sources = _sources()
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    binary = CACHE / digest / "rmqload"
    if binary.is_file():
        return binary
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise UserError("a C compiler (cc) is needed to build rmqload")
    binary.parent.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(f".{os.getpid()}")
    done = subprocess.run([cc, "-O2", "-Wall", "-o", str(tmp),
                           *(str(p) for p in sources if p.suffix == ".c")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"building rmqload failed: {done.stderr.strip()[-500:]}")
    tmp.replace(binary)
    return binary


def _argv(binary: Path, w: Workload, addr: str, warmup: str, duration: str,
          hold: bool) -> list[str]:
    argv = [str(binary), w.mode, *w.args, "-a", addr, "-w", warmup, "-d", duration, "-q"]
    return [*argv, "--hold", f"{HOLD_S}s"] if hold else argv


def _command(w: Workload, warmup: str, duration: str) -> str:
    return " ".join(["rmqload", w.mode, *w.args, "-w", warmup, "-d", duration])


def run_rmqload(binary: Path, w: Workload, addr: str, warmup: str, duration: str) -> dict[str, Any]:
    res = subprocess.run(_argv(binary, w, addr, warmup, duration, False), capture_output=True,
                         text=True, timeout=900)
    out = _result(res.stdout.splitlines(), res.returncode, res.stderr)
    out["command"] = _command(w, warmup, duration)
    return out


def _result(lines: list[str], code: int | None, stderr: str) -> dict[str, Any]:
    found = [ln for ln in lines if ln.startswith('{"tool"')]
    if not found:
        raise UserError(f"rmqload gave no result (exit {code}): {stderr.strip()[-500:]}")
    out: dict[str, Any] = json.loads(found[-1])
    return out


def layout(binary: Path, w: Workload, sample: int = SAMPLE) -> dict[str, Any]:
    """``rmqload layout``: the workload's layout figures and a sample of its topics."""
    res = subprocess.run([str(binary), "layout", w.mode, *w.args, "--sample", str(sample)],
                         capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise UserError(f"rmqload layout failed: {res.stderr.strip()}")
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


class _Holding:
    """rmqload running with ``--hold``: its result line first, then the hold line once told
    to stop."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)

    def result(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = select.select([self.proc.stdout], [], [], deadline - time.monotonic())[0]
            if not ready:
                break
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith('{"tool"'):
                out: dict[str, Any] = json.loads(line)
                return out
        self.stop()
        raise UserError(f"rmqload gave no result (exit {self.proc.returncode}): "
                        f"{self._stderr()}")

    def finish(self) -> dict[str, Any]:
        """Stop holding; the hold line's figures."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        for line in out.splitlines():
            if line.startswith('{"hold"'):
                hold: dict[str, Any] = json.loads(line)["hold"]
                return hold
        return {}

    def stop(self) -> None:
        if self.proc.returncode is not None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def _stderr(self) -> str:
        assert self.proc.stderr is not None
        try:
            return self.proc.stderr.read().strip()[-500:]
        except ValueError:
            return ""


def measure(binary: Path, w: Workload, target: Target | None, props: dict[str, str],
            warmup: str, duration: str, addr: str | None = None,
            java_heap: str = JAVA_HEAP, restarts: bool = True) -> dict[str, Any]:
    """One workload against a fresh server of ``target`` (or a given address)."""
    if addr or target is None:
        result = run_rmqload(binary, w, addr or "", warmup, duration)
        return {"workload": w.name, "target": addr, **summary(result), "raw": result}
    with running(target, props, java_heap) as server:
        if w.restart and restarts:
            return _measure_with_restart(binary, w, server, warmup, duration)
        with TreeSampler(server.pid) as sampler:
            result = run_rmqload(binary, w, server.addr, warmup, duration)
        return _row(w, target, result, sampler)


def _row(w: Workload, target: Target, result: dict[str, Any], sampler: TreeSampler
         ) -> dict[str, Any]:
    return {"workload": w.name, "target": target.name, **summary(result),
            "server_cpu_util": round(sampler.cpu_util, 3),
            "server_peak_pss_mb": round(sampler.peak_bytes / 2**20, 1), "raw": result}


def _measure_with_restart(binary: Path, w: Workload, server: Server, warmup: str,
                          duration: str) -> dict[str, Any]:
    sample = restart.expectations(layout(binary, w))
    holding = _Holding(_argv(binary, w, server.addr, warmup, duration, True))
    try:
        with TreeSampler(server.pid) as sampler:
            result = holding.result(timeout=900)
        result["command"] = _command(w, warmup, duration)
        row = _row(w, server.target, result, sampler)
        host, port = server.addr.rsplit(":", 1)
        row["restart"] = restart.restart_and_wait(server.stop, server.start, host, int(port),
                                                  sample, RESTART_TIMEOUT_S)
        row["restart"]["brokers"] = holding.finish()
    finally:
        holding.stop()
    return row
