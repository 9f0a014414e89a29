"""`pynamesrv up`: the supervisor's /metrics on the status page port, each node's own /metrics."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.command import RemotingCommand
from supervisor.control_client import ControlClient, ControlUnavailable
from tests.conftest import Reaper
from tests.integration.test_node import register, route
from tests.nodeproc import ROOT, TEST_RELEASE, Conn, free_port, free_ports, poll_until
from tests.unit.test_monitoring import dashboard_queries, family, referenced_metrics

pytestmark = pytest.mark.integration

BOOT_S = 90.0
PYNAMESRV = (sys.executable, "-m", "cluster.cli")
# Queries that may rightly have no data on a healthy cluster: no connection limit was hit.
QUIET = {'sum by (instance, limit) (rate(pynamesrv_limit_hits_total{instance=~".*"}[1m]))'}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - loopback test URL
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_supervisor_and_node_metrics(tmp_path: Path, reaper: Reaper) -> None:
    control, http, p1, p2, m1, m2 = free_ports(6)
    path = tmp_path / "cluster.yaml"
    path.write_text("\n".join([
        f"control: tcp://127.0.0.1:{control}", "data_dir: data", "supervisor:",
        "  probe_interval_ms: 200", "  readiness_timeout_s: 60", "  backoff_initial_ms: 100",
        f"  status_http: 127.0.0.1:{http}", "defaults:",
        f"  rocketmqVersion: \"{TEST_RELEASE}\"", "  businessWorkers: 1",
        "nodes:", f"  - {{name: n1, port: {p1}, settings: {{metricsPort: {m1}}}}}",
        f"  - {{name: n2, port: {p2}, settings: {{metricsPort: {m2}}}}}"]) + "\n")
    reaper.track_marker(str(tmp_path))
    with open(tmp_path / "up.log", "wb") as log:
        proc = reaper.spawn([sys.executable, "-m", "cluster.cli", "up", "-c", str(path)],
                            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        client = ControlClient(f"tcp://127.0.0.1:{control}", timeout=5.0)
        try:
            _check(client, proc, http, (m1, m2), tmp_path)
            _check_dashboard(path, f"127.0.0.1:{p2}", http, (m1, m2), tmp_path, reaper)
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
    answering = ("pynamesrv_divergence_node_answering", frozenset({("node", "n1")}))
    s = poll_until(lambda: (m := scrape(url)).get(answering) == 1 and m, 30, 0.2,
                   "a divergence round on /metrics")
    assert s[("pynamesrv_divergence_since_agreement_seconds", frozenset())] == 0
    assert s[("pynamesrv_divergence_entries", frozenset({("table", "topic")}))] == 0
    for port in metrics_ports:  # `up` renders metricsPort into each node's properties
        node = scrape(f"http://127.0.0.1:{port}/metrics")
        assert ("pynamesrv_store_generation", frozenset()) in node
        poll_until(lambda p=port: {"probe", "status"} <= _origins(p), 30, 0.2,
                   "probes and digests counted apart from client traffic")

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


def _origins(port: int) -> set[str]:
    node = scrape(f"http://127.0.0.1:{port}/metrics")
    return {dict(ls)["origin"] for (n, ls) in node if n == "pynamesrv_requests_total"}


def _serving(url: str) -> bool:
    try:
        return bool(scrape(url))
    except OSError:  # the node is still starting
        return False


def _families(url: str) -> set[str]:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - loopback test URL
        text = resp.read().decode()
    return {family(n) for f in text_string_to_metric_families(text)
            for n in (f.name, *(s.name for s in f.samples))}


def _check_dashboard(path: Path, node_addr: str, http: int, metrics_ports: tuple[int, int],
                     root: Path, reaper: Reaper) -> None:
    """Every metric the dashboard and the alert rules name is exported by the supervisor
    or a node; with Debian's prometheus installed, every dashboard query runs on a real
    Prometheus scraping them (from ``pynamesrv monitoring``'s files) without an error."""
    exported = _families(f"http://127.0.0.1:{http}/metrics")
    for port in metrics_ports:
        exported |= _families(f"http://127.0.0.1:{port}/metrics")
    missing = sorted(referenced_metrics() - exported)
    assert missing == [], f"the dashboard or the alerts name metrics nobody exports: {missing}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unknown = sorted({family(m) for m in re.findall(r"`(pynamesrv_[a-z_]+)`", readme)} - exported)
    assert unknown == [], f"the README names metrics nobody exports: {unknown}"
    exe = shutil.which("prometheus")
    if exe is None:
        return
    conn = Conn(node_addr)  # client traffic: a broker registers, heartbeats, clients look up
    assert conn.call(register("DashTopic")).code == ResponseCode.SUCCESS
    beat = RemotingCommand(code=904, version=409, ext_fields={
        "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a", "clusterName": "C"})
    assert conn.call(beat).code == ResponseCode.SUCCESS
    assert conn.call(route("DashTopic")).code == ResponseCode.SUCCESS
    assert conn.call(route("NoSuchTopic")).code == ResponseCode.TOPIC_NOT_EXIST
    mon, port = root / "monitoring", free_port()
    subprocess.run([*PYNAMESRV, "monitoring", "-c", str(path), "--out", str(mon),
                    "--scrape-interval", "1s"], check=True, capture_output=True, timeout=60)
    with open(root / "prometheus.log", "wb") as log:
        reaper.spawn([exe, f"--config.file={mon / 'prometheus.yml'}",
                      f"--storage.tsdb.path={root / 'tsdb'}",
                      f"--web.listen-address=127.0.0.1:{port}"], cwd=root, stdout=log,
                     stderr=subprocess.STDOUT)
        api = f"http://127.0.0.1:{port}/api/v1/query?query="

        def query(q: str) -> list[dict]:
            with urllib.request.urlopen(api + urllib.parse.quote(q), timeout=10) as resp:
                doc = orjson.loads(resp.read())
            assert doc["status"] == "success", (q, doc)
            return list(doc["data"]["result"])

        def scraped() -> bool:
            try:
                rows = query("min(count_over_time(up[1m])) >= 4 and min(up) == 1")
            except OSError:
                return False
            return bool(rows) and len(query("up")) == 3

        poll_until(scraped, 60, 0.5, "Prometheus scraping both nodes and the supervisor")
        empty = [q for q in dashboard_queries() if not query(q)]
        conn.close()
        assert set(empty) <= QUIET, f"dashboard queries with no data: {sorted(set(empty) - QUIET)}"
