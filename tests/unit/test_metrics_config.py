"""metricsPort in cluster.yaml: on in the shipped file, refused when it clashes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cluster.core.config import REPO_DEFAULT, load_cluster
from cluster.core.errors import ConfigError
from cluster.core.settings_schema import BY_KEY

BASE = """\
control: tcp://127.0.0.1:19870
data_dir: data
supervisor:
  status_http: 127.0.0.1:19880
nodes:
  - {{name: a, port: 19876, settings: {{metricsPort: {m1}}}}}
  - {{name: b, port: 19877, settings: {{metricsPort: {m2}}}}}
"""


def error_of(tmp_path: Path, m1: int, m2: int, for_start: bool = False) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(BASE.format(m1=m1, m2=m2))
    with pytest.raises(ConfigError) as info:
        load_cluster(path, for_start=for_start)
    return str(info.value)


def test_shipped_cluster_serves_metrics_on_distinct_ports() -> None:
    cfg = load_cluster(REPO_DEFAULT)
    ports = [n.settings["metricsPort"] for n in cfg.nodes]
    assert all(ports) and len(set(ports)) == len(ports)
    assert not set(ports) & {n.port for n in cfg.nodes}


def test_standalone_default_is_off() -> None:
    assert BY_KEY["metricsPort"].default == 0
    assert BY_KEY["metricsHost"].default == "127.0.0.1"


@pytest.mark.parametrize(("m1", "m2", "message"), [
    (19877, 0, "nodes[0].settings.metricsPort: 19877 is also the port of nodes[1]"),
    (19870, 0, "nodes[0].settings.metricsPort: 19870 is also the control port"),
    (0, 19880, "nodes[1].settings.metricsPort: 19880 is also supervisor.status_http"),
    (19990, 19990, "nodes[1].settings.metricsPort: 19990 is also the metricsPort of nodes[0]"),
    (70000, 0, "nodes[0].settings.metricsPort: 70000 is outside"),
])
def test_clashing_metrics_port_is_refused(tmp_path: Path, m1: int, m2: int,
                                          message: str) -> None:
    assert message in error_of(tmp_path, m1, m2)


def test_start_check_finds_a_taken_metrics_port(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        problem = error_of(tmp_path, taken, 0, for_start=True)
    assert f"nodes[0].settings.metricsPort: 127.0.0.1:{taken} is in use" in problem
