"""Run benchmark workloads with rmqload against fresh servers, one at a time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cluster.bench.sampler import TreeSampler
from cluster.bench.workloads import Workload, summary
from cluster.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
RMQLOAD_SRC = ROOT.parent / "shared" / "tools" / "rmqload"
CACHE = ROOT / ".cache" / "rmqload"


def find_rmqload(explicit: str | None) -> Path:
    """An rmqload binary: the given path, or built from ../shared/tools/rmqload into .cache."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise UserError(f"--rmqload {path}: no such file")
        return path
    binary = CACHE / "rmqload"
    if binary.is_file():
        return binary
    if not (RMQLOAD_SRC / "rmqload.c").is_file():
        raise UserError(f"rmqload not found: build it from its sources and pass --rmqload "
                        f"(looked in {RMQLOAD_SRC})")
    CACHE.mkdir(parents=True, exist_ok=True)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise UserError("a C compiler (cc) is needed to build rmqload")
    subprocess.run([cc, "-O2", "-o", str(binary), str(RMQLOAD_SRC / "rmqload.c")], check=True)
    return binary


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def started_server(kind: str, props: dict[str, str]) -> Iterator[tuple[str, int]]:
    """A fresh server process: ("node" | "baseline"); yields (address, pid)."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="pynamesrv-bench-") as tmp:
        if kind == "node":
            cfg = Path(tmp) / "namesrv.properties"
            cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            argv = [sys.executable, "-m", "worker.node", "--exit-with-parent", "--port", str(port),
                    "--data-dir", tmp, "--config", str(cfg), "--name", "bench"]
        else:
            argv = [sys.executable, "-m", "cluster.bench.baseline", str(port)]
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            if "success" not in line and "ready" not in line:
                raise UserError(f"{kind} server did not start: {line.strip()!r}")
            yield f"127.0.0.1:{port}", proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_rmqload(binary: Path, w: Workload, addr: str, warmup: str, duration: str) -> dict:
    argv = [str(binary), w.mode, *w.args, "-a", addr, "-w", warmup, "-d", duration, "-q"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise UserError(f"rmqload gave no result (exit {res.returncode}): {res.stderr.strip()}")
    out: dict = json.loads(lines[-1])
    out["command"] = " ".join(["rmqload", w.mode, *w.args, "-w", warmup, "-d", duration])
    return out


def measure(binary: Path, w: Workload, target: str, props: dict[str, str], warmup: str,
            duration: str, addr: str | None = None) -> dict:
    """One workload against a fresh server of kind ``target`` (or a given address)."""
    if addr:
        result = run_rmqload(binary, w, addr, warmup, duration)
        return {"workload": w.name, "target": addr, **summary(result), "raw": result}
    with started_server(target, props) as (address, pid), TreeSampler(pid) as sampler:
        result = run_rmqload(binary, w, address, warmup, duration)
    return {"workload": w.name, "target": target, **summary(result),
            "server_cpu_util": round(sampler.cpu_util, 3),
            "server_peak_pss_mb": round(sampler.peak_pss / 2**20, 1),
            "java_4_9_7": w.java_4_9_7, "raw": result}
