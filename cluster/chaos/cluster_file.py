"""The cluster a chaos run tests, written into the run's directory: its own unless told otherwise.

Without a cluster file the run gets a cluster of its own: ``CHAOS_NODES`` nodes
on ports the kernel hands out free, and short protocol timings (``CHAOS_*``)
that leave room for every scenario's faults in a minute. With ``-c FILE`` it
tests FILE's nodes, ports, timings and node settings. Either way the data
directories are under the run's directory, so every run starts from empty data
and the user's own ``data/`` is never touched.
"""

from __future__ import annotations

import socket
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

from cluster.core.config import ClusterConfig, load_cluster

CLUSTER_FILE = "cluster.yaml"
DATA_DIR = "data"
CHAOS_NODES = 3
CHAOS_HEARTBEAT_MS = 5000
CHAOS_SETTINGS: dict[str, Any] = {
    "scanNotActiveBrokerInterval": 1000, "brokerChannelExpiredTime": 20000}
CHAOS_SUPERVISOR: dict[str, Any] = {
    "readiness_timeout_s": 30, "probe_interval_ms": 500, "backoff_initial_ms": 200,
    "stop_grace_s": 5}


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports nothing listens on (held together while chosen)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket())
            s.bind((host, 0))
            ports.append(int(s.getsockname()[1]))
    return ports


def own_cluster(ports: list[int]) -> dict[str, Any]:
    """The run's own cluster: ``ports[0]`` for control, the rest for the nodes."""
    return {
        "control": f"tcp://127.0.0.1:{ports[0]}",
        "data_dir": DATA_DIR,
        "brokers": {"heartbeat_ms": CHAOS_HEARTBEAT_MS},
        "supervisor": dict(CHAOS_SUPERVISOR),
        "defaults": dict(CHAOS_SETTINGS),
        "nodes": [{"name": f"n{i + 1}", "host": "127.0.0.1", "port": port}
                  for i, port in enumerate(ports[1:])],
    }


def given_cluster(path: str) -> dict[str, Any]:
    """FILE (checked first) with its data directories moved under the run's directory."""
    load_cluster(path)
    doc: dict[str, Any] = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    doc["data_dir"] = DATA_DIR
    for node in doc["nodes"]:
        node.pop("data_dir", None)
    return doc


def write_run_cluster(out_dir: Path, config: str | None) -> Path:
    """``out_dir/cluster.yaml`` for this run (see the module doc); returns its path."""
    doc = given_cluster(config) if config else own_cluster(free_ports(CHAOS_NODES + 1))
    path = out_dir / CLUSTER_FILE
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def planned_cluster(config: str | None) -> ClusterConfig:
    """The cluster a run with ``config`` would test, for ``chaos plan`` (nothing started)."""
    if config:
        return load_cluster(config)
    with tempfile.TemporaryDirectory(prefix="pynamesrv-chaos-plan-") as tmp:
        return load_cluster(write_run_cluster(Path(tmp), None))

