"""Chaos scenarios (marker ``chaos``): a cluster file per test with short timeouts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chaos.audit_worker import AuditWorker
from tests.conftest import Reaper

FAST_SETTINGS = {"scanNotActiveBrokerInterval": 1000, "brokerChannelExpiredTime": 6000,
                 "serverChannelMaxIdleTimeSeconds": 120}


def write_cluster(tmp: Path, ports: Callable[[], int], nodes: int = 3,
                  overrides: dict[str, dict[str, Any]] | None = None,
                  defaults: dict[str, Any] | None = None) -> Path:
    """A cluster.yaml on free ports with the short timeouts of the chaos tests
    (``defaults`` replaces some of them for every node)."""
    doc: dict[str, Any] = {
        "control": f"tcp://127.0.0.1:{ports()}",
        "data_dir": "data",
        "brokers": {"heartbeat_ms": 2000},
        "supervisor": {"readiness_timeout_s": 30, "backoff_initial_ms": 200,
                       "stop_grace_s": 5, "probe_interval_ms": 500},
        "defaults": {**FAST_SETTINGS, **(defaults or {})},
        "nodes": [{"name": f"n{i + 1}", "host": "127.0.0.1", "port": ports()}
                  for i in range(nodes)],
    }
    for node in doc["nodes"]:
        extra = (overrides or {}).get(node["name"])
        if extra:
            node["settings"] = extra
    (tmp / "data").mkdir(exist_ok=True)
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def chaos_reaper(tmp_path: Path) -> Iterator[Reaper]:
    """Kills anything still running from this test's directory at teardown."""
    r = Reaper()
    r.track_marker(str(tmp_path))
    yield r
    r.reap()


@pytest.fixture(scope="session")
def audit_job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuditWorker]:
    """The audits of the session's chaos runs on one Spark session, started at once."""
    reaper = Reaper()
    worker = AuditWorker(reaper, tmp_path_factory.mktemp("audit-worker") / "worker.log")
    try:
        yield worker
    finally:
        worker.stop()
        reaper.reap()
