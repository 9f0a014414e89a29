"""The shipped monitoring files: alert rules checked and unit-tested with promtool, the
Grafana dashboard well formed with every query valid PromQL, ``pynamesrv monitoring``.

promtool is Debian's (``scripts/setup.sh`` installs the ``prometheus`` package); the
checks that need it skip without it. The metric names are checked against a live
node and supervisor in ``tests/integration/test_supervisor_metrics.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.cli.main import main
from cluster.cli.monitoring import ALERTS, ALERTS_TEST, DASHBOARD
from tests.nodeproc import free_port

METRIC = re.compile(r"\bpynamesrv_[a-z_]+\b")
# Grafana's variables, as a query is sent for the dashboard's defaults
VARIABLES = {"$__rate_interval": "1m", "$instance": ".*"}


def promtool() -> str:
    exe = os.environ.get("PYNAMESRV_PROMTOOL") or shutil.which("promtool")
    if exe is None:
        pytest.skip("no promtool: install Debian's prometheus (scripts/setup.sh does) or set "
                    "PYNAMESRV_PROMTOOL")
    return exe


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def dashboard_queries(doc: dict[str, Any] | None = None) -> list[str]:
    """Every panel query, with Grafana's variables replaced by their defaults."""
    out = []
    for panel in (doc or dashboard())["panels"]:
        for target in panel.get("targets", ()):
            expr = target["expr"]
            for var, value in VARIABLES.items():
                expr = expr.replace(var, value)
            out.append(expr)
    return out


def referenced_metrics() -> set[str]:
    """Metric names the dashboard and the alert rules use, by family (no ``_total``,
    ``_bucket``, ``_count``, ``_sum``)."""
    text = " ".join(dashboard_queries()) + " " + ALERTS.read_text()
    return {family(m) for m in METRIC.findall(text)}


def family(name: str) -> str:
    return re.sub(r"_(total|bucket|count|sum)$", "", name)


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60, cwd=cwd)


def test_alert_rules_pass_promtool_check_and_their_unit_tests() -> None:
    exe = promtool()
    checked = _run(exe, "check", "rules", str(ALERTS))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _run(exe, "test", "rules", ALERTS_TEST.name, cwd=ALERTS_TEST.parent)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_alert_has_a_summary_and_a_severity() -> None:
    rules = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    assert len(rules) >= 5
    tested = ALERTS_TEST.read_text()
    for r in rules:
        assert r["labels"]["severity"] in ("warning", "critical"), r["alert"]
        assert r["annotations"]["summary"] and r["annotations"]["description"], r["alert"]
        assert f"alertname: {r['alert']}" in tested, f"{r['alert']} has no promtool test"


def test_dashboard_is_well_formed() -> None:
    doc = dashboard()
    assert doc["uid"] == "pynamesrv" and doc["schemaVersion"] >= 36
    names = {v["name"] for v in doc["templating"]["list"]}
    assert names == {"datasource", "instance"}
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in doc["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"panel {p['title']!r} overlaps another"
        cells |= mine
        if p["type"] != "row":
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert p["targets"] and all(t["expr"] and t["refId"] for t in p["targets"])
    covered = " ".join(dashboard_queries(doc))
    for needed in ("pynamesrv_requests_total", "pynamesrv_request_latency_seconds_bucket",
                   "pynamesrv_route_template_hits_total", 'code="103"',
                   "pynamesrv_live_brokers", "pynamesrv_divergence_node_entries",
                   "pynamesrv_divergence_since_agreement_seconds", 'origin="client"'):
        assert needed in covered, needed


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    exe = promtool()
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(dashboard_queries())]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    checked = _run(exe, "check", "rules", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_monitoring_command_writes_a_valid_prometheus_config(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    ports = [free_port() for _ in range(5)]
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(f"control: tcp://127.0.0.1:{ports[0]}\nsupervisor:\n"
                   f"  status_http: 127.0.0.1:{ports[1]}\nnodes:\n"
                   f"  - {{name: n1, port: {ports[2]}, settings: {{metricsPort: {ports[3]}}}}}\n"
                   f"  - {{name: n2, port: {ports[4]}}}\n")
    out = tmp_path / "mon"
    assert main(["monitoring", "-c", str(cfg), "--out", str(out)]) == 0
    prom = yaml.safe_load((out / "prometheus.yml").read_text())
    targets = {j["job_name"]: j["static_configs"][0]["targets"] for j in prom["scrape_configs"]}
    assert targets == {"pynamesrv-nodes": [f"127.0.0.1:{ports[3]}"],
                       "pynamesrv-supervisor": [f"127.0.0.1:{ports[1]}"]}
    provider = yaml.safe_load((out / "grafana/provisioning/dashboards/pynamesrv.yaml")
                              .read_text())["providers"][0]
    assert Path(provider["options"]["path"], "pynamesrv.json").read_text() == \
        DASHBOARD.read_text()
    assert len(capsys.readouterr().out.splitlines()) == 5
    if shutil.which("promtool") or os.environ.get("PYNAMESRV_PROMTOOL"):
        checked = _run(promtool(), "check", "config", str(out / "prometheus.yml"))
        assert checked.returncode == 0, checked.stdout + checked.stderr
    bare = tmp_path / "bare.yaml"
    bare.write_text(f"control: tcp://127.0.0.1:{ports[0]}\nnodes:\n"
                    f"  - {{name: n1, port: {ports[2]}}}\n")
    assert main(["monitoring", "-c", str(bare), "--out", str(out)]) == 2
    assert "nothing to scrape" in capsys.readouterr().err
