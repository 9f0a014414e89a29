"""Generate a node's ``namesrv.properties`` (Java properties syntax) from cluster.yaml."""

from __future__ import annotations

import os
from pathlib import Path

from cluster.core.config import NodeConfig
from cluster.core.protocol.properties import format_properties
from cluster.core.settings_schema import Value, value_text


def node_properties(node: NodeConfig) -> dict[str, Value]:
    """The node's settings (``cluster.core.settings_schema``) and identity, paths made absolute."""
    props: dict[str, Value] = dict(node.settings)
    props.update({
        "listenPort": node.port,
        "bindAddress": node.host,
        "nodeName": node.name,
        "kvConfigPath": str(node.kv_config_path),
        "configStorePath": str(node.properties_path),
    })
    return props


def render_properties(props: dict[str, Value]) -> str:
    return format_properties({k: value_text(v) for k, v in props.items()})


def write_properties(node: NodeConfig) -> Path:
    """Write the node's properties file atomically and return its path."""
    path = node.properties_path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_properties(node_properties(node)), encoding="utf-8")
    os.replace(tmp, path)
    return path
