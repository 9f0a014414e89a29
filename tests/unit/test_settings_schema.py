"""The one settings schema: cluster.yaml and the node accept exactly the same values.

Every integer setting is tried at both ends of its range (min and max accepted,
min-1 and max+1 refused) in cluster.yaml validation and in the node's loading of
its properties file; the README and architecture tables are the generated ones.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from cluster.core.config import load_cluster
from cluster.core.errors import ConfigError
from cluster.core.settings_schema import (
    SETTINGS,
    YAML_SETTINGS,
    Kind,
    Setting,
    Update,
    main,
    markdown_cluster,
    markdown_node,
)
from supervisor.nodefiles import node_properties, render_properties
from tests.nodeproc import ROOT
from worker.controller.settings import NodeSettings, load_settings

INTS = [s for s in SETTINGS if s.kind is Kind.INT]
YAML_INTS = [s for s in INTS if s.yaml]
GENERATED = re.compile(r"<!-- generated: python -m cluster\.core\.settings_schema "
                       r"--markdown (\w+) -->\n(.*?)<!-- end generated -->", re.S)


def ends(s: Setting) -> list[tuple[int, bool]]:
    return [(s.lo, True), (s.hi, True), (s.lo - 1, False), (s.hi + 1, False)]


def cluster_yaml(tmp_path: Path, key: str, value: object) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(f"control: tcp://127.0.0.1:19870\ndefaults:\n  {key}: {value}\n"
                    "nodes:\n  - {name: a, port: 19876}\n")
    return path


def node_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "namesrv.properties"
    path.write_text(text)
    return path


@pytest.mark.parametrize("setting", YAML_INTS, ids=lambda s: s.key)
def test_cluster_yaml_range_ends(tmp_path: Path, setting: Setting) -> None:
    for value, ok in ends(setting):
        path = cluster_yaml(tmp_path, setting.key, value)
        if ok:
            assert load_cluster(path).nodes[0].settings[setting.key] == value
        else:
            with pytest.raises(ConfigError, match=rf"defaults\.{setting.key}: {value} is outside"):
                load_cluster(path)


@pytest.mark.parametrize("setting", INTS, ids=lambda s: s.key)
def test_node_loading_range_ends(tmp_path: Path, setting: Setting) -> None:
    for value, ok in ends(setting):
        config = node_file(tmp_path, f"{setting.key}={value}\n")
        if ok:
            loaded = load_settings(tmp_path, config)
            assert loaded.config[setting.key] == str(value)
            if setting.attr:
                assert getattr(loaded, setting.attr) == value
        else:
            with pytest.raises(ConfigError, match=rf"key {setting.key}: {value} is outside"):
                load_settings(tmp_path, config)


@pytest.mark.parametrize("setting", YAML_INTS, ids=lambda s: s.key)
def test_what_cluster_yaml_accepts_the_node_loads(tmp_path: Path, setting: Setting) -> None:
    for value in (setting.lo, setting.hi):
        node = load_cluster(cluster_yaml(tmp_path, setting.key, value)).nodes[0]
        rendered = node_file(tmp_path, render_properties(node_properties(node)))
        assert load_settings(node.data_dir, rendered).config[setting.key] == str(value)


def test_expiry_below_the_range_is_refused_by_cluster_yaml_as_by_the_node(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as yaml_error:
        load_cluster(cluster_yaml(tmp_path, "brokerChannelExpiredTime", 50))
    with pytest.raises(ConfigError) as node_error:
        load_settings(tmp_path, node_file(tmp_path, "brokerChannelExpiredTime=50\n"))
    problem = "50 is outside [100, 86400000]"
    assert problem in str(yaml_error.value) and problem in str(node_error.value)


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("orderMessageEnable", "'yes'", "expected true or false"),
    ("ioWorkers", "true", "expected an integer"),
    ("ioWorkers", "'2'", "expected an integer"),
    ("kvConfigPath", "''", "expected a non-empty path"),
    ("configBlackList", "7", "expected a one-line string"),
    ("listenPort", "9000", "unknown key"),
])
def test_cluster_yaml_types(tmp_path: Path, key: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=f"defaults.{key}: {problem}"):
        load_cluster(cluster_yaml(tmp_path, key, value))


@pytest.mark.parametrize(("text", "problem"), [
    ("ioWorkers=many\n", "key ioWorkers: 'many' is not an integer"),
    ("ioWorkers=1_0\n", "key ioWorkers: '1_0' is not an integer"),
    ("nodeName=a\\nb\n", "key nodeName: 'a\\nb' contains a line break"),
    ("kvConfigPath=\n", "key kvConfigPath: expected a non-empty path"),
])
def test_node_loading_types(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        load_settings(tmp_path, node_file(tmp_path, text))


def test_node_defaults_come_from_the_schema(tmp_path: Path) -> None:
    loaded = load_settings(tmp_path, node_file(tmp_path, "unknownKey= kept as is\n"), port=9000)
    for s in SETTINGS:
        if s.default is not None and s.kind is not Kind.PATH and s.key != "listenPort":
            assert loaded.config[s.key] == s.text(s.default)
    assert loaded.config["unknownKey"] == "kept as is"
    assert loaded.config["listenPort"] == "9000" and loaded.name == "node-9000"
    assert loaded.kv_config_path == tmp_path / "kvConfig.json"
    assert loaded.config_store_path == tmp_path / "namesrv.properties"
    assert loaded.file_keys == ("unknownKey",)


def test_cli_options_win_over_the_file(tmp_path: Path) -> None:
    config = node_file(tmp_path, "listenPort=1\nbindAddress=10.0.0.1\nnodeName=f\n")
    loaded = load_settings(tmp_path, config, port=2, host="127.0.0.2", name="c")
    assert (loaded.port, loaded.host, loaded.name) == (2, "127.0.0.2", "c")
    assert loaded.config["nodeName"] == "c"
    with pytest.raises(ConfigError, match="--port: key listenPort: 0 is outside"):
        load_settings(tmp_path, config, port=0)


def test_node_settings_attributes_are_the_schema_attrs() -> None:
    fields = {f.name for f in dataclasses.fields(NodeSettings)}
    assert fields == {s.attr for s in SETTINGS if s.attr} | {"data_dir", "config", "file_keys"}


def test_live_settings_have_no_start_time_attribute() -> None:
    assert all(not s.attr for s in SETTINGS if s.update in (Update.LIVE, Update.IGNORED))


def test_every_live_setting_is_read_from_the_shared_config_at_use() -> None:
    source = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "worker").rglob("*.py"))
    unread = [s.key for s in SETTINGS if s.update is Update.LIVE
              and not re.search(rf'nsconfig\.get_(bool|int)\(t, "{s.key}"\)', source)]
    assert unread == []


def test_only_java_keys_are_kept_for_the_next_start() -> None:
    assert all(s.java or s.java5 for s in SETTINGS
               if s.update in (Update.RESTART, Update.IGNORED))


def generated_tables(path: Path) -> dict[str, str]:
    return dict(GENERATED.findall(path.read_text(encoding="utf-8")))


def test_readme_table_is_the_generated_one() -> None:
    assert generated_tables(ROOT / "README.md") == {"cluster": markdown_cluster()}


def test_architecture_table_is_the_generated_one() -> None:
    assert generated_tables(ROOT / "docs" / "architecture.md") == {"node": markdown_node()}


def test_generator_prints_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == markdown_cluster()
    assert main(["--markdown", "node"]) == 0
    out = capsys.readouterr().out
    assert out == markdown_node()
    assert len(out.splitlines()) == len(SETTINGS) + 2
    assert all(f"`{k}`" in markdown_cluster() for k in YAML_SETTINGS)
