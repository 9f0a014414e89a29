#!/usr/bin/env python3
"""Time ``pynamesrv up`` from its exec to "cluster ready", alternating installations.

    scripts/bench_up.py [--runs 5] [-c cluster.yaml] PYNAMESRV [PYNAMESRV ...]

Each run copies the cluster file with every port (control, nodes, metricsPort, status page,
address service) replaced by a free one and the data under a fresh temporary directory,
starts ``PYNAMESRV up -c COPY`` with its output on a pipe, and takes the time until the
supervisor prints ``cluster ready``. It then checks that every node answers a request (a
ready cluster that does not serve is an error, not a time), stops the cluster with
``PYNAMESRV stop`` and waits for ``up`` to exit. The installations given take turns run
by run, so a change in the machine's load falls on all of them alike. Prints each run,
then the median and range per installation, of the wall time and of the CPU time the
process tree had spent when it became ready (less at the mercy of other load than the wall
time on a shared machine).
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
READY_LINE = b"cluster ready"
READY_TIMEOUT_S = 120.0


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def private_copy(source: Path, into: Path) -> tuple[Path, list[int]]:
    """``source`` with free ports and its data under ``into``; (the copy, the node ports)."""
    doc: dict[str, Any] = yaml.safe_load(source.read_text())
    nodes = doc.get("nodes") or []
    ports = iter(free_ports(3 + 2 * len(nodes)))
    doc["control"] = f"tcp://127.0.0.1:{next(ports)}"
    doc["data_dir"] = str(into / "data")
    sup = doc.setdefault("supervisor", {}) or {}
    for key in ("status_http", "addr_service"):
        if sup.get(key):
            sup[key] = f"127.0.0.1:{next(ports)}"
    node_ports = []
    for node in nodes:
        node["port"] = next(ports)
        node_ports.append(node["port"])
        node.pop("data_dir", None)
        settings = node.get("settings") or {}
        if settings.get("metricsPort"):
            settings["metricsPort"] = next(ports)
    path = into / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, node_ports


def answers(port: int) -> bool:
    """One GET_KV_CONFIG (code 101) over a fresh connection is answered with its opaque."""
    header = b'{"code":101,"flag":0,"language":"PYTHON","opaque":7,"version":0,"extFields":{}}'
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                return False
            data += chunk
    return b'"opaque":7' in data


def tree_cpu_s(pid: int, detail: bool = False) -> float:
    """CPU seconds (user + system) of ``pid`` and every descendant alive, and of the children
    they reaped; ``detail`` prints them per process."""
    root = psutil.Process(pid)
    total = 0.0
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
            name = p.name()
        except psutil.NoSuchProcess:
            continue
        cpu = t.user + t.system + t.children_user + t.children_system
        total += cpu
        if detail:
            print(f"  {p.pid:>7} {name:<16} {cpu:.2f} s")
    return total


def one_run(pynamesrv: str, source: Path, detail: bool = False) -> tuple[float, float]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-up-"))
    cfg, ports = private_copy(source, tmp)
    t0 = time.monotonic()
    up = subprocess.Popen([pynamesrv, "up", "-c", str(cfg)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=tmp)
    assert up.stdout is not None
    try:
        out = b""
        while READY_LINE not in out:
            left = t0 + READY_TIMEOUT_S - time.monotonic()
            if left <= 0 or not select.select([up.stdout], [], [], left)[0]:
                raise SystemExit(f"{pynamesrv}: not ready within {READY_TIMEOUT_S:g}s")
            chunk = os.read(up.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit(f"{pynamesrv}: up exited before ready: {out.decode()}")
            out += chunk
        took = time.monotonic() - t0
        cpu = tree_cpu_s(up.pid, detail)
        silent = [p for p in ports if not answers(p)]
        if silent:
            raise SystemExit(f"{pynamesrv}: ready, but ports {silent} do not answer")
        return took, cpu
    finally:
        subprocess.run([pynamesrv, "stop", "-c", str(cfg)], capture_output=True, timeout=60)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pynamesrv", nargs="+", help="pynamesrv executables to compare")
    ap.add_argument("--runs", type=int, default=5, help="runs per executable (5)")
    ap.add_argument("-c", "--config", type=Path, default=ROOT / "cluster.yaml")
    ap.add_argument("--detail", action="store_true", help="CPU time per process at ready")
    args = ap.parse_args()
    times: dict[str, list[float]] = {os.path.abspath(p): [] for p in args.pynamesrv}
    cpus: dict[str, list[float]] = {p: [] for p in times}
    for i in range(args.runs):
        for p in times:
            took, cpu = one_run(p, args.config, args.detail)
            times[p].append(took)
            cpus[p].append(cpu)
            print(f"run {i + 1} {p}: {took:.2f} s, cpu {cpu:.2f} s "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
    for p, ts in times.items():
        print(f"{p}:\n  wall {_summary(ts)}\n  cpu  {_summary(cpus[p])}")
    return 0


def _summary(ts: list[float]) -> str:
    return (f"median {statistics.median(ts):.2f} s, range {min(ts):.2f}-{max(ts):.2f} s, "
            f"runs {' '.join(f'{t:.2f}' for t in ts)}")


if __name__ == "__main__":
    sys.exit(main())
