"""Run benchmark workloads with rmqload against fresh servers, one at a time."""

from __future__ import annotations

import json
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cluster.bench.sampler import TreeSampler
from cluster.bench.workloads import Workload, summary
from cluster.core.errors import UserError
from cluster.peers import java as peers_java
from cluster.peers import rust
from cluster.peers.catalog import Release, release

ROOT = Path(__file__).resolve().parents[2]
RMQLOAD_SRC = ROOT.parent / "shared" / "tools" / "rmqload"
JAVA_HEAP = "1g"
BOOT_S = 90.0
CACHE = ROOT / ".cache" / "rmqload"
JAVA_PREFIX = "java-"  # a target "java-5.5" is the Java NameServer of release 5.5


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def started_server(kind: str, props: dict[str, str],
                   java_heap: str = JAVA_HEAP) -> Iterator[tuple[str, int]]:
    """A fresh server process: "node", "baseline", "java-<release>" (the real Java
    NameServer from ``cluster.peers``) or "rust" (the Rust NameServer); yields
    (address, pid)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="pynamesrv-bench-") as tmp:
        argv, env = _server_argv(kind, port, Path(tmp), props, java_heap)
        proc = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.PIPE, text=True, env=env,
                                stderr=subprocess.DEVNULL if kind == "rust" else (
                                    subprocess.STDOUT if kind.startswith(JAVA_PREFIX)
                                    else None))
        try:
            _wait_boot(kind, proc, port)
            yield f"127.0.0.1:{port}", proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _server_argv(kind: str, port: int, tmp: Path, props: dict[str, str], java_heap: str
                 ) -> tuple[list[str], dict[str, str] | None]:
    if kind == "node":
        cfg = tmp / "namesrv.properties"
        cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return [sys.executable, "-m", "worker.node", "--exit-with-parent", "--port", str(port),
                "--data-dir", str(tmp), "--config", str(cfg), "--name", "bench"], None
    if kind.startswith(JAVA_PREFIX):
        rel = _release(kind.removeprefix(JAVA_PREFIX))
        why = peers_java.missing(rel, "namesrv")
        if why:
            raise UserError(f"--java: {why}")
        cmd = peers_java.namesrv(rel, port, tmp / "java", heap=java_heap)
        return cmd.argv, cmd.environ()
    if kind == "rust":
        if rust.installed() is None:
            print("bench: installing the Rust NameServer first (cargo install; about 12 "
                  "minutes on 2 cores)", file=sys.stderr, flush=True)
            try:
                rust.install()
            except rust.RustInstallFailed as exc:
                raise UserError(f"--rust: {exc}") from None
        return rust.namesrv_argv(port, tmp / "rust"), None
    return [sys.executable, "-m", "cluster.bench.baseline", str(port)], None


def _release(name: str) -> Release:
    try:
        return release(name)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _wait_boot(kind: str, proc: subprocess.Popen[str], port: int) -> None:
    """Until the server's boot line (a line with "success" or "ready"), or, for the Rust
    NameServer, which prints no such line, until its port takes connections."""
    if kind == "rust":
        _wait_port(proc, port)
        return
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + BOOT_S
    while time.monotonic() < deadline:
        if not select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        line = proc.stdout.readline()
        if not line:
            break
        if "success" in line or "ready" in line:
            if kind.startswith(JAVA_PREFIX):  # its output is not read any more: let it go
                threading.Thread(target=proc.stdout.read, daemon=True).start()
            return
        seen.append(line.strip())
    raise UserError(f"{kind} server did not start: {' | '.join(seen[-5:])!r}")


def _wait_port(proc: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + BOOT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UserError(f"the Rust NameServer exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise UserError(f"the Rust NameServer did not listen on {port} within {BOOT_S:.0f} s")


def run_rmqload(binary: Path, w: Workload, addr: str, warmup: str, duration: str
                ) -> dict[str, Any]:
    argv = [str(binary), w.mode, *w.args, "-a", addr, "-w", warmup, "-d", duration, "-q"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise UserError(f"rmqload gave no result (exit {res.returncode}): {res.stderr.strip()}")
    out: dict[str, Any] = json.loads(lines[-1])
    out["command"] = " ".join(["rmqload", w.mode, *w.args, "-w", warmup, "-d", duration])
    return out


def measure(binary: Path, w: Workload, target: str, props: dict[str, str], warmup: str,
            duration: str, addr: str | None = None, java_heap: str = JAVA_HEAP
            ) -> dict[str, Any]:
    """One workload against a fresh server of kind ``target`` (or a given address)."""
    if addr:
        result = run_rmqload(binary, w, addr, warmup, duration)
        return {"workload": w.name, "target": addr, **summary(result), "raw": result}
    with started_server(target, props, java_heap) as (address, pid), \
            TreeSampler(pid) as sampler:
        result = run_rmqload(binary, w, address, warmup, duration)
    return {"workload": w.name, "target": target, **summary(result),
            "server_cpu_util": round(sampler.cpu_util, 3),
            "server_peak_pss_mb": round(sampler.peak_bytes / 2**20, 1), "raw": result}
