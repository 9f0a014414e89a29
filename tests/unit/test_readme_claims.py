"""What the README says about settings is true: every key it names exists in the schema
(``cluster.core.settings_schema``) or in cluster.yaml's loader, with the defaults it
states, examples written as ``key: value`` load, and nothing the node implements is
listed as not implemented. (Every command it names: tests/integration/test_cli_entry.py;
every metric it names: tests/integration/test_supervisor_metrics.py.)"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from cluster.cli.main import build_parser
from cluster.core.config import BROKER_KEYS, NODE_KEYS, SUPERVISOR_KEYS, TOP_KEYS, load_cluster
from cluster.core.errors import ConfigError
from cluster.core.settings_schema import SETTINGS
from tests.nodeproc import ROOT, free_port

README = (ROOT / "README.md").read_text(encoding="utf-8")
PROSE = re.sub(r"<!-- generated.*?<!-- end generated -->", "", README, flags=re.S)
NODE_SETTINGS = {s.key for s in SETTINGS}
SETTING_NAME = r"[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*|tls\.[a-zA-Z.]+"  # how settings are spelt
# camelCase names the README uses that are not settings: fields of requests, of the ACL
# file and of snapshots, and Java's names for things
NOT_SETTINGS = {"accessKey", "secretKey", "globalWhiteRemoteAddresses", "whiteRemoteAddress",
                "bodyCrc32", "heartbeatTimeoutMillis", "takenAt", "compressedRegister",
                "registerBrokerAll", "innerClientAuthenticationCredentials",
                "pynamesrvOrigin", "brokerVersionDesc", "enableActingMaster",
                # the Java broker's and client's settings of the address service
                "namesrvAddr", "setNamesrvAddr", "unitName", "fetchNamesrvAddrInterval",
                "registerNameServerPeriod", "rmqAddressServerDomain",
                "rmqAddressServerSubGroup"}


def _commands() -> set[str]:
    def subs(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                return dict(a.choices)
        return {}
    top = subs(build_parser())
    return set(top) | {n for p in top.values() for n in subs(p)}


def _table(heading: str) -> dict[str, str]:
    """``key -> default`` of the table under a README heading."""
    section = README.split(f"\n### {heading}\n", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", section, flags=re.M))


def _number(text: str) -> int | None:
    m = re.fullmatch(r"`?(\d+)`?", text.strip())
    return int(m.group(1)) if m else None


def test_cluster_yaml_tables_name_every_key_with_its_default() -> None:
    top = _table("Top level")
    assert set(top) == {k for k in TOP_KEYS if k != "brokers"} | {"brokers.heartbeat_ms"}
    assert _number(top["brokers.heartbeat_ms"]) == BROKER_KEYS["heartbeat_ms"][1]
    sup = _table("`supervisor`")
    assert set(sup) == set(SUPERVISOR_KEYS)
    for key, (_, default) in SUPERVISOR_KEYS.items():
        if default is not None:
            assert _number(sup[key]) == default, f"supervisor.{key}: README says {sup[key]}"
    assert set(_table("`nodes[]`")) == set(NODE_KEYS)


def test_dotted_cluster_yaml_keys_exist() -> None:
    for group, key in re.findall(r"`(supervisor|brokers)\.([a-z_]+)`", PROSE):
        keys = SUPERVISOR_KEYS if group == "supervisor" else BROKER_KEYS
        assert key in keys, f"README names {group}.{key}, which cluster.yaml does not have"


def test_every_setting_the_readme_names_exists() -> None:
    named = set(re.findall(rf"`({SETTING_NAME})`", PROSE))
    unknown = sorted(named - NODE_SETTINGS - NOT_SETTINGS - _commands())
    assert unknown == [], f"README names settings the schema does not have: {unknown}"


@pytest.mark.parametrize("key,value", sorted(set(re.findall(
    rf"`({SETTING_NAME}): ([a-z0-9]+)`", PROSE))))
def test_settings_written_as_examples_load(tmp_path: Path, key: str, value: str) -> None:
    assert key in NODE_SETTINGS, f"README example `{key}: {value}` is not a setting"
    path = tmp_path / "cluster.yaml"
    path.write_text(f"control: tcp://127.0.0.1:{free_port()}\ndefaults:\n  {key}: {value}\n"
                    f"nodes:\n  - {{name: n1, port: {free_port()}}}\n")
    load_cluster(path)


def test_a_misspelt_setting_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(f"defaults:\n  ioWorker: 2\nnodes:\n  - {{name: n1, port: {free_port()}}}\n")
    with pytest.raises(ConfigError, match="ioWorker"):
        load_cluster(path)


def test_nothing_with_settings_is_listed_as_not_implemented() -> None:
    line = re.search(r"Not implemented: (.*?)\n\n", README, flags=re.S)
    assert line is not None
    features = [f.strip(" .\n") for f in re.split(r",(?![^(]*\))", line.group(1))]
    for feature in features:
        prefix = feature.split()[0].lower()
        backed = sorted(k for k in NODE_SETTINGS if k.lower().startswith(prefix))
        assert not backed, f"README lists {feature!r} as not implemented; settings: {backed}"
