"""Settings of one node: schema defaults < the ``--config`` properties file < CLI options.

Keys, types, defaults and ranges come from ``cluster.core.settings_schema``. ``NodeSettings``
holds what the node's processes need at start (one attribute per schema setting with an
``attr``); ``config`` holds the text of every key for the shared runtime config, which
the request processors and the controller read at each use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cluster.core.errors import ConfigError
from cluster.core.protocol.properties import PropertiesError, parse_properties
from cluster.core.settings_schema import BY_KEY, SETTINGS, Kind, Value, parse_or_fail

INSTALL_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class NodeSettings:
    data_dir: Path
    port: int
    host: str
    name: str
    kv_config_path: Path
    config_store_path: Path
    idle_timeout_s: int
    frame_max: int
    io_workers: int
    io_large_worker: bool
    business_workers: int
    business_read_workers: int
    business_write_nice: int
    io_max_pending: int
    business_window: int
    shutdown_drain_ms: int
    max_connections: int
    max_connections_per_address: int
    header_max: int
    pending_max: int
    requests_max: int
    frame_timeout_s: int
    write_timeout_s: int
    tls_mode: str
    tls_cert: str
    tls_key: str
    tls_client_auth: str
    tls_trust: str
    metrics_port: int
    metrics_host: str
    rocketmq_version: str
    config: dict[str, str]  # every key's text: schema keys resolved, then unknown file keys
    file_keys: tuple[str, ...]  # the config file's keys in file order

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _read_properties(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    try:
        return parse_properties(text)
    except PropertiesError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _values(props: dict[str, str], source: str, cli: dict[str, str]) -> dict[str, Value]:
    """Typed value of every schema key given by the defaults, the file or the CLI."""
    values = {s.key: s.default for s in SETTINGS if s.default is not None}
    for key, raw in props.items():
        if key in BY_KEY:
            values[key] = parse_or_fail(source, key, raw)
    for key, raw in cli.items():
        values[key] = parse_or_fail(f"--{_CLI_OPTION[key]}", key, raw)
    return values


_CLI_OPTION = {"listenPort": "port", "bindAddress": "host", "nodeName": "name"}


def _derive(values: dict[str, Value], data_dir: Path, config: Path | None) -> None:
    """Fill the derived defaults and make the file paths absolute."""
    values.setdefault("nodeName", f"node-{values['listenPort']}")
    values.setdefault("rocketmqHome", os.environ.get("ROCKETMQ_HOME") or str(INSTALL_DIR))
    values.setdefault("configStorePath",
                      str(config.absolute() if config else data_dir / "namesrv.properties"))
    for s in SETTINGS:
        if s.kind is Kind.PATH:
            values[s.key] = str(data_dir / Path(str(values[s.key])).expanduser())


def load_settings(
    data_dir: Path,
    config: Path | None = None,
    port: int | None = None,
    host: str | None = None,
    name: str | None = None,
) -> NodeSettings:
    """Defaults < config file < command-line options. Raises ConfigError."""
    props = _read_properties(config) if config is not None else {}
    cli = {key: str(v) for key, v in (("listenPort", port), ("bindAddress", host or None),
                                       ("nodeName", name or None)) if v is not None}
    values = _values(props, str(config), cli)
    _derive(values, data_dir, config)
    text = {s.key: s.text(values[s.key]) for s in SETTINGS}
    extra = {k: v for k, v in props.items() if k not in BY_KEY}
    attrs = {s.attr: Path(str(values[s.key])) if s.kind is Kind.PATH else values[s.key]
             for s in SETTINGS if s.attr}
    return NodeSettings(data_dir=data_dir, config={**text, **extra}, file_keys=tuple(props),
                        **attrs)  # type: ignore[arg-type]
