"""`pynamesrv up`: the supervisor's /metrics on the status page port, each node's own /metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from supervisor.control_client import ControlClient, ControlUnavailable
from tests.conftest import Reaper
from tests.nodeproc import free_port, poll_until

pytestmark = pytest.mark.integration

BOOT_S = 90.0
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - loopback test URL
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        if (p := free_port()) not in ports:
            ports.append(p)
    return ports


def test_supervisor_and_node_metrics(tmp_path: Path, reaper: Reaper) -> None:
    control, http, p1, p2, m1, m2 = _ports(6)
    path = tmp_path / "cluster.yaml"
    path.write_text("\n".join([
        f"control: tcp://127.0.0.1:{control}", "data_dir: data", "supervisor:",
        "  probe_interval_ms: 200", "  readiness_timeout_s: 60", "  backoff_initial_ms: 100",
        f"  status_http: 127.0.0.1:{http}", "defaults:", "  businessWorkers: 1",
        "nodes:", f"  - {{name: n1, port: {p1}, settings: {{metricsPort: {m1}}}}}",
        f"  - {{name: n2, port: {p2}, settings: {{metricsPort: {m2}}}}}"]) + "\n")
    reaper.track_marker(str(tmp_path))
    with open(tmp_path / "up.log", "wb") as log:
        proc = reaper.spawn([sys.executable, "-m", "cluster.cli", "up", "-c", str(path)],
                            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        client = ControlClient(f"tcp://127.0.0.1:{control}", timeout=5.0)
        try:
            _check(client, proc, http, (m1, m2), tmp_path)
        finally:
            try:
                client.request("shutdown")
                proc.wait(60)
            except (ControlUnavailable, subprocess.TimeoutExpired):
                pass
            client.close()


def _check(client: ControlClient, proc: subprocess.Popen[bytes], http: int,
           metrics_ports: tuple[int, int], root: Path) -> None:
    def nodes() -> list[dict]:
        try:
            return list(client.status())
        except ControlUnavailable:
            assert proc.poll() is None, (root / "up.log").read_text()
            return []

    poll_until(lambda: (ns := nodes()) and all(n["state"] == "running" for n in ns),
               BOOT_S, 0.2, "every node running")
    url = f"http://127.0.0.1:{http}/metrics"
    state = "pynamesrv_supervisor_node_state"
    probe = ("pynamesrv_supervisor_probe_seconds", frozenset({("node", "n1")}))

    def published() -> Samples | None:
        m = scrape(url)
        running = (state, frozenset({("node", "n2"), ("state", "running")}))
        return m if m.get(running) == 1 and m.get(probe) else None

    s = poll_until(published, 30, 0.2, "supervisor metrics")
    for node in ("n1", "n2"):
        assert s[(state, frozenset({("node", node), ("state", "running")}))] == 1
        assert s[(state, frozenset({("node", node), ("state", "failed")}))] == 0
        assert s[("pynamesrv_supervisor_node_restarts_total", frozenset({("node", node)}))] == 0
    assert 0 < s[probe] < 5
    for port in metrics_ports:  # `up` renders metricsPort into each node's properties
        node = scrape(f"http://127.0.0.1:{port}/metrics")
        assert ("pynamesrv_store_generation", frozenset()) in node

    n1 = next(n for n in nodes() if n["name"] == "n1")
    os.kill(n1["pid"], signal.SIGKILL)
    restarts = ("pynamesrv_supervisor_node_restarts_total", frozenset({("node", "n1")}))
    poll_until(lambda: scrape(url).get(restarts) == 1, 60, 0.2, "restart on /metrics")
    client.stop("n2")  # a stop and a start asked for are not restarts
    poll_until(lambda: any(n["name"] == "n2" and n["state"] == "stopped" and not n["pid"]
                           for n in nodes()), 60, 0.1, "n2 stopped")
    client.start("n2")
    running_n2 = (state, frozenset({("node", "n2"), ("state", "running")}))
    after = poll_until(lambda: (m := scrape(url)).get(running_n2) == 1 and m, 60, 0.2,
                       "n2 running again on /metrics")
    assert after[("pynamesrv_supervisor_node_restarts_total", frozenset({("node", "n2")}))] == 0
    assert after[restarts] == 1
    poll_until(lambda: _serving(f"http://127.0.0.1:{metrics_ports[0]}/metrics"), 60, 0.5,
               "restarted node serving /metrics")


def _serving(url: str) -> bool:
    try:
        return bool(scrape(url))
    except OSError:  # the node is still starting
        return False
