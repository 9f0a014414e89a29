"""The cluster a chaos run tests: its own by default, a given file's nodes on request, and
always its own empty data under the run's directory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cluster.chaos.cluster_file import (
    CHAOS_HEARTBEAT_MS,
    CHAOS_NODES,
    planned_cluster,
    write_run_cluster,
)
from cluster.chaos.runner import ChaosOptions, fresh_out_dir, plan_schedule
from cluster.core.config import REPO_DEFAULT, load_cluster
from cluster.core.errors import UserError

SHIPPED = load_cluster(REPO_DEFAULT)


def test_the_own_cluster_has_free_ports_and_its_data_in_the_run(tmp_path: Path) -> None:
    cfg = load_cluster(write_run_cluster(tmp_path, None), for_start=True)
    assert len(cfg.nodes) == CHAOS_NODES and cfg.broker_heartbeat_ms == CHAOS_HEARTBEAT_MS
    shipped = {n.port for n in SHIPPED.nodes} | {int(SHIPPED.control.rpartition(":")[2])}
    ports = {n.port for n in cfg.nodes} | {int(cfg.control.rpartition(":")[2])}
    assert len(ports) == CHAOS_NODES + 1 and not ports & shipped
    assert cfg.supervisor.status_http is None
    assert all(n.data_dir == tmp_path / "data" / n.name for n in cfg.nodes)
    assert not any(n.data_dir.exists() and any(n.data_dir.iterdir()) for n in cfg.nodes)


def test_a_given_file_keeps_its_nodes_but_not_its_data(tmp_path: Path) -> None:
    given = tmp_path / "mine.yaml"
    doc = yaml.safe_load(REPO_DEFAULT.read_text())
    doc["nodes"][1]["data_dir"] = "/var/lib/somewhere"
    given.write_text(yaml.safe_dump(doc))
    run = tmp_path / "run"
    run.mkdir()
    cfg = load_cluster(write_run_cluster(run, str(given)))
    assert [(n.name, n.port, dict(n.settings)) for n in cfg.nodes] == [
        (n.name, n.port, dict(n.settings)) for n in SHIPPED.nodes]
    assert cfg.control == SHIPPED.control and cfg.broker_heartbeat_ms == 30000
    assert cfg.data_dir == run / "data"
    assert [n.data_dir for n in cfg.nodes] == [run / "data" / n.name for n in cfg.nodes]


def test_a_bad_given_file_is_refused_with_its_own_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: 3\n")
    with pytest.raises(UserError, match="bad.yaml: nodes"):
        planned_cluster(str(bad))


def test_a_run_needs_a_new_or_empty_directory(tmp_path: Path) -> None:
    fresh_out_dir(tmp_path / "new")
    fresh_out_dir(tmp_path / "new")  # still empty
    (tmp_path / "new" / "history.jsonl").write_text("{}\n")
    with pytest.raises(UserError, match="is not empty"):
        fresh_out_dir(tmp_path / "new")


def test_run_and_plan_refuse_a_duration_too_short_for_the_given_cluster(tmp_path: Path) -> None:
    opts = ChaosOptions("pause-node", 7, 60.0, tmp_path / "out", str(REPO_DEFAULT))
    with pytest.raises(UserError, match="needs --duration 88s or more"):
        plan_schedule(opts, planned_cluster(opts.config))
    own = ChaosOptions("pause-node", 7, 60.0, tmp_path / "out")
    schedule, timing = plan_schedule(own, planned_cluster(None))
    assert schedule.events and timing.heartbeat_s == CHAOS_HEARTBEAT_MS / 1000
