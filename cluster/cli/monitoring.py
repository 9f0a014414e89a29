"""``pynamesrv monitoring --out DIR``: Prometheus and Grafana files for a cluster file's nodes.

Writes, from ``-c cluster.yaml``:

* ``prometheus.yml``: a scrape job for every node's ``metricsPort`` and one for the
  supervisor's ``status_http`` (its ``/metrics``), with ``alerts.yml`` as its rules;
* ``alerts.yml``: the shipped alert rules (``assets/alerts.yml``);
* ``grafana/provisioning/datasources/pynamesrv.yaml``: that Prometheus as Grafana's
  default data source;
* ``grafana/provisioning/dashboards/pynamesrv.yaml`` and
  ``grafana/dashboards/pynamesrv.json``: the shipped dashboard, provisioned from a file.

Then ``prometheus --config.file=DIR/prometheus.yml`` and Grafana with
``paths.provisioning = DIR/grafana/provisioning`` (README "Monitoring").
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import yaml

from cluster.core.argtypes import Subparsers
from cluster.core.config import ClusterConfig, load_cluster, metrics_ports
from cluster.core.durations import duration
from cluster.core.errors import UserError

ASSETS = Path(__file__).resolve().parent / "assets"
DASHBOARD = ASSETS / "grafana-dashboard.json"
ALERTS = ASSETS / "alerts.yml"
ALERTS_TEST = ASSETS / "alerts_test.yml"


def register(sub: Subparsers) -> None:
    p = sub.add_parser("monitoring", help="write Prometheus and Grafana files for the cluster")
    p.add_argument("-c", "--config", default=None, metavar="CLUSTER_YAML",
                   help="cluster file whose nodes and status page to scrape")
    p.add_argument("--out", required=True, help="directory to write into (made if missing)")
    p.add_argument("--prometheus-url", default="http://127.0.0.1:9090",
                   help="where Grafana reaches Prometheus (http://127.0.0.1:9090)")
    p.add_argument("--scrape-interval", type=duration, default=15.0,
                   help="Prometheus scrape interval (15s)")
    p.set_defaults(func=_monitoring)


def _host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else f"[{host}]" if ":" in host else host


def scrape_config(cfg: ClusterConfig, interval: str) -> dict[str, Any]:
    nodes = [f"{_host(str(cfg.nodes[i].settings.get('metricsHost', '127.0.0.1')))}:{port}"
             for i, port in metrics_ports(cfg.nodes)]
    jobs: list[dict[str, Any]] = []
    if nodes:
        jobs.append({"job_name": "pynamesrv-nodes", "static_configs": [{"targets": nodes}]})
    if cfg.supervisor.status_host_port is not None:
        host, port = cfg.supervisor.status_host_port
        jobs.append({"job_name": "pynamesrv-supervisor",
                     "static_configs": [{"targets": [f"{_host(host)}:{port}"]}]})
    return {"global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": ["alerts.yml"], "scrape_configs": jobs}


def grafana_files(prometheus_url: str, dashboards: Path) -> dict[str, dict[str, Any]]:
    return {
        "datasources/pynamesrv.yaml": {"apiVersion": 1, "datasources": [{
            "name": "Prometheus (pynamesrv)", "uid": "pynamesrv-prometheus",
            "type": "prometheus", "access": "proxy", "url": prometheus_url, "isDefault": True}]},
        "dashboards/pynamesrv.yaml": {"apiVersion": 1, "providers": [{
            "name": "pynamesrv", "type": "file", "disableDeletion": False,
            "allowUiUpdates": True, "options": {"path": str(dashboards)}}]},
    }


def write(cfg: ClusterConfig, out: Path, prometheus_url: str, interval: str) -> list[Path]:
    """Every file, written; returns their paths."""
    dashboards = (out / "grafana" / "dashboards").resolve()
    written = []
    out.mkdir(parents=True, exist_ok=True)
    prom = out / "prometheus.yml"
    prom.write_text(yaml.safe_dump(scrape_config(cfg, interval), sort_keys=False))
    written.append(prom)
    written.append(Path(shutil.copy2(ALERTS, out / "alerts.yml")))
    for rel, doc in grafana_files(prometheus_url, dashboards).items():
        path = out / "grafana" / "provisioning" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        written.append(path)
    dashboards.mkdir(parents=True, exist_ok=True)
    written.append(Path(shutil.copy2(DASHBOARD, dashboards / "pynamesrv.json")))
    return written


def prometheus_duration(seconds: float) -> str:
    """Prometheus' duration syntax (whole units): ``15s``, or ``1500ms``."""
    ms = max(1, round(seconds * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _monitoring(args: argparse.Namespace) -> int:
    cfg = load_cluster(args.config)
    if not metrics_ports(cfg.nodes) and cfg.supervisor.status_host_port is None:
        raise UserError(f"{cfg.path}: no node has metricsPort and supervisor.status_http is "
                        "not set: nothing to scrape")
    for path in write(cfg, Path(args.out), args.prometheus_url,
                      prometheus_duration(args.scrape_interval)):
        print(path)
    return 0
