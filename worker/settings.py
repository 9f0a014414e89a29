"""Static settings of one node: defaults, the ``--config`` properties file, CLI overrides.

Keys and defaults are listed in docs/architecture.md ("Node settings").
Runtime-updatable keys (orderMessageEnable, ...) also live here as the
initial values handed to the shared namesrv config.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from cluster.errors import ConfigError
from cluster.protocol.codes import DEFAULT_MAX_FRAME

# key -> (attribute, type, default); None default means "derived"
_INT_KEYS: dict[str, tuple[str, int, int, int]] = {
    # key: (attr, default, min, max)
    "listenPort": ("port", 9876, 1, 65535),
    "scanNotActiveBrokerInterval": ("scan_interval_ms", 5000, 10, 3_600_000),
    "brokerChannelExpiredTime": ("broker_expired_ms", 120_000, 100, 86_400_000),
    "serverChannelMaxIdleTimeSeconds": ("idle_timeout_s", 120, 1, 86_400),
    "frameMaxLength": ("frame_max", DEFAULT_MAX_FRAME, 1024, 1 << 30),
    "ioWorkers": ("io_workers", 1, 1, 64),
    "businessWorkers": ("business_workers", 2, 1, 64),
    "businessReadWorkers": ("business_read_workers", 1, 0, 64),
    "businessWriteNice": ("business_write_nice", 19, 0, 19),
    "ioMaxPending": ("io_max_pending", 10_000, 1, 10_000_000),
    "businessWindow": ("business_window", 256, 1, 100_000),
    "shutdownDrainMillis": ("shutdown_drain_ms", 5000, 0, 600_000),
}
_STR_KEYS = {"bindAddress": "host", "nodeName": "name"}
_PATH_KEYS = {"kvConfigPath": "kv_config_path", "configStorePath": "config_store_path"}


@dataclass(frozen=True)
class NodeSettings:
    data_dir: Path
    port: int = 9876
    host: str = "127.0.0.1"
    name: str = ""
    kv_config_path: Path = Path()
    config_store_path: Path = Path()
    scan_interval_ms: int = 5000
    broker_expired_ms: int = 120_000
    idle_timeout_s: int = 120
    frame_max: int = DEFAULT_MAX_FRAME
    io_workers: int = 1
    business_workers: int = 2
    business_read_workers: int = 1
    business_write_nice: int = 19
    io_max_pending: int = 10_000
    business_window: int = 256
    shutdown_drain_ms: int = 5000
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _parse_int(source: str, key: str, raw: str, lo: int, hi: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{source}: key {key}: {raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{source}: key {key}: {value} is outside [{lo}, {hi}]")
    return value


def _read_properties(path: Path) -> dict[str, str]:
    from cluster.protocol.properties import PropertiesError, parse_properties

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


def _apply(props: dict[str, str], source: str) -> dict[str, object]:
    values: dict[str, object] = {}
    for key, raw in props.items():
        if key in _INT_KEYS:
            attr, _default, lo, hi = _INT_KEYS[key]
            values[attr] = _parse_int(source, key, raw, lo, hi)
        elif key in _STR_KEYS:
            values[_STR_KEYS[key]] = raw.strip()
        elif key in _PATH_KEYS:
            values[_PATH_KEYS[key]] = Path(raw.strip()).expanduser()
    return values


def load_settings(
    data_dir: Path,
    config: Path | None = None,
    port: int | None = None,
    host: str | None = None,
    name: str | None = None,
) -> NodeSettings:
    """Defaults < config file < command-line options. Raises ConfigError."""
    props = _read_properties(config) if config is not None else {}
    values = _apply(props, str(config))
    if port is not None:
        values["port"] = _parse_int("--port", "listenPort", str(port), 1, 65535)
    if host:
        values["host"] = host
    if name:
        values["name"] = name
    settings = NodeSettings(data_dir=data_dir, properties=props, **values)  # type: ignore[arg-type]
    return _derive(settings, config)


def _derive(s: NodeSettings, config: Path | None) -> NodeSettings:
    return dataclasses.replace(
        s,
        name=s.name or f"node-{s.port}",
        kv_config_path=s.kv_config_path if s.kv_config_path != Path() else
        s.data_dir / "kvConfig.json",
        config_store_path=s.config_store_path if s.config_store_path != Path() else
        (config or s.data_dir / "namesrv.properties"),
    )
