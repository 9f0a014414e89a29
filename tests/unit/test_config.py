"""cluster.yaml loading: the shipped default, inheritance, and one clear error per mistake."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from cluster.core.config import REPO_DEFAULT, load_cluster
from cluster.core.errors import ConfigError
from cluster.core.settings_schema import yaml_defaults
from supervisor.nodefiles import node_properties, render_properties
from tests.nodeproc import free_port

BASE = """\
control: tcp://127.0.0.1:{control}
data_dir: data
defaults:
  businessWorkers: 3
nodes:
  - {{name: a, port: {p1}}}
  - {{name: b, port: {p2}, settings: {{businessWorkers: 1}}}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def base(tmp_path: Path, ports: tuple[int, int, int] = (19870, 19876, 19877)) -> str:
    return BASE.format(control=ports[0], p1=ports[1], p2=ports[2])


def error_of(path: Path, for_start: bool = False) -> str:
    with pytest.raises(ConfigError) as info:
        load_cluster(path, for_start=for_start)
    assert info.value.exit_code == 2
    text = str(info.value)
    assert "\n" not in text
    assert str(path) in text
    return text


def test_repository_default_is_three_local_nodes() -> None:
    cfg = load_cluster(REPO_DEFAULT)
    assert [n.port for n in cfg.nodes] == [9876, 9877, 9878]
    assert {n.host for n in cfg.nodes} == {"127.0.0.1"}
    assert cfg.namesrv_addr() == "127.0.0.1:9876;127.0.0.1:9877;127.0.0.1:9878"
    assert cfg.control == "tcp://127.0.0.1:9870"
    assert cfg.expiry_ms == 120000 and cfg.scan_interval_ms == 5000
    assert cfg.broker_heartbeat_ms == 30000
    assert all(n.data_dir == REPO_DEFAULT.parent / "data" / n.name for n in cfg.nodes)


def test_repository_default_states_only_what_differs_from_built_in_defaults() -> None:
    doc = yaml.safe_load(REPO_DEFAULT.read_text(encoding="utf-8"))
    stated = [doc.get("defaults") or {}, *((n.get("settings") or {}) for n in doc["nodes"])]
    builtin = yaml_defaults()
    assert [(k, v) for group in stated for k, v in group.items() if builtin.get(k) == v] == []
    assert load_cluster(REPO_DEFAULT).nodes[0].settings == {**builtin, "metricsPort": 10876}


def test_nodes_inherit_defaults_and_override_them(tmp_path: Path) -> None:
    cfg = load_cluster(write(tmp_path, base(tmp_path)))
    a, b = cfg.nodes
    assert a.settings["businessWorkers"] == 3
    assert b.settings["businessWorkers"] == 1
    assert a.settings["ioWorkers"] == 1
    assert a.data_dir == tmp_path / "data" / "a"
    assert a.kv_config_path == tmp_path / "data" / "a" / "kvConfig.json"


def test_properties_carry_the_node_identity(tmp_path: Path) -> None:
    node = load_cluster(write(tmp_path, base(tmp_path))).nodes[1]
    text = render_properties(node_properties(node))
    lines = set(text.splitlines())
    assert {"listenPort=19877", "nodeName=b", "bindAddress=127.0.0.1",
            "businessWorkers=1", "orderMessageEnable=false",
            f"configStorePath={node.properties_path}"} <= lines


@pytest.mark.parametrize(("edit", "key"), [
    (lambda t: t + "bogus: 1\n", "bogus: unknown key"),
    (lambda t: t.replace("businessWorkers: 3", "businessWorker: 3"),
     "defaults.businessWorker: unknown key"),
    (lambda t: t.replace("businessWorkers: 3", "businessWorkers: zero"),
     "defaults.businessWorkers: expected an integer"),
    (lambda t: t.replace("businessWorkers: 1", "businessWorkers: 0"),
     "nodes[1].settings.businessWorkers: 0 is outside"),
    (lambda t: t.replace("port: 19877", "port: 19876"),
     "nodes[1].port: 19876 is also used by nodes[0]"),
    (lambda t: t.replace("name: b", "name: a"), "nodes[1].name: a is also used by nodes[0]"),
    (lambda t: t.replace("port: 19877", "port: 19870"), "nodes[1].port: 19870 is also the control"),
    (lambda t: t.replace("port: 19877", "port: 70000"), "nodes[1].port: 70000 is outside"),
    (lambda t: t.replace("{name: a, port: 19876}", "{name: a, port: 19876, colour: red}"),
     "nodes[0].colour: unknown key"),
    (lambda t: t.replace("tcp://127.0.0.1", "tcp://10.0.0.1"), "control: must be a loopback"),
    (lambda t: t + "data_dir: other\n", "duplicate key 'data_dir'"),
    (lambda t: t.replace("nodes:\n", "nodes: []\nx:\n"), "x: unknown key"),
    (lambda t: "control: [\n", "invalid YAML"),
    (lambda t: "", "nodes: the file is empty"),
])
def test_each_mistake_is_one_line_naming_file_and_key(tmp_path: Path, edit, key: str) -> None:
    path = write(tmp_path, edit(base(tmp_path)))
    assert key in error_of(path)


def test_missing_file_is_named(tmp_path: Path) -> None:
    assert "cannot read" in error_of(tmp_path / "cluster.yaml")


def test_port_in_use_is_found_only_when_starting(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        path = write(tmp_path, base(tmp_path, (19870, port, 19877)))
        load_cluster(path)
        assert f"nodes[0].port: 127.0.0.1:{port} is in use" in error_of(path, for_start=True)


def test_control_port_in_use_is_found(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        path = write(tmp_path, base(tmp_path, (port, 19876, 19877)))
        assert "control: " in error_of(path, for_start=True)


def test_data_dir_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    path = write(tmp_path, base(tmp_path).replace("data_dir: data", "data_dir: file/data"))
    assert "data_dir: cannot create" in error_of(path, for_start=True)


def test_start_check_creates_node_dirs(tmp_path: Path) -> None:
    ports = (free_port(), free_port(), free_port())
    path = write(tmp_path, base(tmp_path, ports))
    assert not (tmp_path / "data").exists()
    cfg = load_cluster(path, for_start=True)
    assert all(n.data_dir.is_dir() for n in cfg.nodes)
