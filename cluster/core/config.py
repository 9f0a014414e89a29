"""Load and validate ``cluster.yaml`` into immutable dataclasses.

``load_cluster(path)`` checks structure, types and ranges; ``load_cluster(path,
for_start=True)`` also checks what starting the cluster needs (ports free, data
directories creatable). Every problem is one ``ConfigError`` line naming the
file and the key, e.g. ``cluster.yaml: nodes[1].port: 9876 is also used by nodes[0]``.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cluster.core.errors import ConfigError
from cluster.core.settings_schema import YAML_SETTINGS, yaml_defaults

DEFAULT_CONTROL = "tcp://127.0.0.1:9870"
REPO_DEFAULT = Path(__file__).resolve().parents[2] / "cluster.yaml"
MAX_NODES = 64

Check = Callable[[Any], str | None]


def _int(lo: int, hi: int = 2**31 - 1) -> Check:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return f"expected an integer, got {v!r}"
        if not lo <= v <= hi:
            return f"{v} is outside [{lo}, {hi}]"
        return None
    return check


def _str(v: Any) -> str | None:
    if not isinstance(v, str) or not v or "\n" in v:
        return f"expected a non-empty one-line string, got {v!r}"
    return None


def _listen(v: Any) -> str | None:
    """``HOST:PORT`` with a literal host (``[::1]:PORT`` for IPv6) and a port in range."""
    if _str(v):
        return f"expected HOST:PORT, got {v!r}"
    host, _, port = v.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"expected HOST:PORT with a port in [1, 65535], got {v!r}"
    return None


SUPERVISOR_KEYS: dict[str, tuple[Check, Any]] = {
    "readiness_timeout_s": (_int(1, 3600), 30),
    "probe_interval_ms": (_int(50, 600000), 1000),
    "probe_timeout_ms": (_int(50, 600000), 1000),
    "hung_after_failures": (_int(1, 1000), 3),
    "backoff_initial_ms": (_int(0, 3600000), 500),
    "backoff_max_ms": (_int(0, 3600000), 10000),
    "stable_after_s": (_int(0, 86400), 10),
    "flap_window_s": (_int(1, 86400), 60),
    "flap_max_restarts": (_int(1, 1000), 5),
    "stop_grace_s": (_int(1, 600), 10),
    "log_max_bytes": (_int(4096), 10485760),
    "status_http": (_listen, None),
    "addr_service": (_listen, None),
}
HTTP_KEYS = ("status_http", "addr_service")  # the supervisor's HTTP listeners

BROKER_KEYS: dict[str, tuple[Check, Any]] = {
    "heartbeat_ms": (_int(100, 3600000), 30000),
}

TOP_KEYS = ("control", "data_dir", "brokers", "supervisor", "defaults", "nodes")
NODE_KEYS = ("name", "host", "port", "data_dir", "settings")


@dataclass(frozen=True)
class SupervisorConfig:
    readiness_timeout_s: int = 30
    probe_interval_ms: int = 1000
    probe_timeout_ms: int = 1000
    hung_after_failures: int = 3
    backoff_initial_ms: int = 500
    backoff_max_ms: int = 10000
    stable_after_s: int = 10
    flap_window_s: int = 60
    flap_max_restarts: int = 5
    stop_grace_s: int = 10
    log_max_bytes: int = 10485760
    status_http: str | None = None
    addr_service: str | None = None

    @property
    def status_host_port(self) -> tuple[str, int] | None:
        """Where the status page listens (``status_http`` split), None when it is off."""
        return None if self.status_http is None else split_listen(self.status_http)

    def http_listeners(self) -> list[tuple[str, tuple[str, int]]]:
        """(key, (host, port)) of each HTTP listener that is on."""
        return [(f"supervisor.{k}", split_listen(v)) for k in HTTP_KEYS
                if (v := getattr(self, k)) is not None]


def split_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (already checked) -> (host without brackets, port)."""
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def parse_listen(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` given on a command line -> (host, port); ConfigError naming ``what``."""
    problem = _listen(text)
    if problem:
        raise ConfigError(f"{what}: {problem}")
    return split_listen(text)


@dataclass(frozen=True)
class NodeConfig:
    name: str
    host: str
    port: int
    data_dir: Path
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def properties_path(self) -> Path:
        return self.data_dir / "namesrv.properties"

    @property
    def kv_config_path(self) -> Path:
        return self.data_dir / str(self.settings["kvConfigPath"])


@dataclass(frozen=True)
class ClusterConfig:
    path: Path
    control: str
    data_dir: Path
    nodes: tuple[NodeConfig, ...]
    supervisor: SupervisorConfig = field(default_factory=SupervisorConfig)
    broker_heartbeat_ms: int = 30000

    def namesrv_addr(self) -> str:
        """The ``namesrvAddr`` a RocketMQ client or broker uses: ``h:p;h:p;...``."""
        return ";".join(n.addr for n in self.nodes)

    def node(self, name: str) -> NodeConfig:
        for n in self.nodes:
            if n.name == name:
                return n
        raise ConfigError(f"{self.path}: nodes: no node named {name!r}")

    @property
    def expiry_ms(self) -> int:
        """Longest broker expiry over the nodes (``brokerChannelExpiredTime``)."""
        return max(int(n.settings["brokerChannelExpiredTime"]) for n in self.nodes)

    @property
    def scan_interval_ms(self) -> int:
        """Longest expiry scan period over the nodes (``scanNotActiveBrokerInterval``)."""
        return max(int(n.settings["scanNotActiveBrokerInterval"]) for n in self.nodes)


# ------------------------------------------------------------------ loading


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a mapping key given twice."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode,
                       deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def default_config_path() -> Path:
    """``./cluster.yaml`` if present, else the one at the repository root."""
    local = Path("cluster.yaml")
    return local.resolve() if local.is_file() else REPO_DEFAULT


def load_cluster(path: str | os.PathLike[str] | None = None, *,
                 for_start: bool = False) -> ClusterConfig:
    """Parse and validate a cluster file; ``for_start`` adds port and directory checks."""
    p = Path(path).resolve() if path is not None else default_config_path()
    cfg = _Parser(p).parse(_read_yaml(p))
    if for_start:
        check_startable(cfg)
    return cfg


def _read_yaml(p: Path) -> Any:
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{p}: {where}invalid YAML: {problem}") from exc


class _Parser:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.parent

    def fail(self, key: str, msg: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {msg}")

    def mapping(self, v: Any, key: str, allowed: tuple[str, ...] | Mapping[str, Any]
                ) -> dict[str, Any]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.fail(key, f"expected a mapping, got {type(v).__name__}")
        for k in v:
            if k not in allowed:
                raise self.fail(f"{key}.{k}" if key else str(k), "unknown key")
        return v

    def typed(self, raw: dict[str, Any], key: str, schema: Mapping[str, tuple[Check, Any]]
              ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in raw.items():
            problem = schema[k][0](v)
            if problem:
                raise self.fail(f"{key}.{k}", problem)
            out[k] = v
        return out

    def parse(self, doc: Any) -> ClusterConfig:
        if doc is None:
            raise self.fail("nodes", "the file is empty")
        top = self.mapping(doc, "", TOP_KEYS)
        control = self.control(top.get("control", DEFAULT_CONTROL))
        data_dir = self.directory(top.get("data_dir", "data"), "data_dir", self.base)
        brokers = self.typed(self.mapping(top.get("brokers"), "brokers", BROKER_KEYS),
                             "brokers", BROKER_KEYS)
        sup = self.supervisor(top.get("supervisor"))
        defaults = self.settings(top.get("defaults"), "defaults", yaml_defaults())
        nodes = self.nodes(top.get("nodes"), data_dir, defaults)
        self.control_not_a_node(control, nodes)
        self.status_not_taken(sup, control, nodes)
        self.metrics_not_taken(sup, control, nodes)
        return ClusterConfig(self.path, control, data_dir, nodes, sup,
                             int(brokers.get("heartbeat_ms", 30000)))

    def control(self, v: Any) -> str:
        if _str(v) or not v.startswith("tcp://"):
            raise self.fail("control", f"expected tcp://HOST:PORT, got {v!r}")
        host, _, port = v[len("tcp://"):].rpartition(":")
        if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            raise self.fail("control", f"must be a loopback address, got {host!r}")
        if _int(1, 65535)(int(port) if port.isdigit() else port):
            raise self.fail("control", f"bad port {port!r}")
        return str(v)

    def directory(self, v: Any, key: str, base: Path) -> Path:
        if _str(v):
            raise self.fail(key, _str(v) or "")
        return (base / os.path.expanduser(str(v))).resolve()

    def supervisor(self, v: Any) -> SupervisorConfig:
        raw = self.typed(self.mapping(v, "supervisor", SUPERVISOR_KEYS),
                         "supervisor", SUPERVISOR_KEYS)
        sup = SupervisorConfig(**raw)
        if sup.backoff_max_ms < sup.backoff_initial_ms:
            raise self.fail("supervisor.backoff_max_ms", "is smaller than backoff_initial_ms")
        return sup

    def settings(self, v: Any, key: str, inherited: Mapping[str, Any]) -> dict[str, Any]:
        """Node settings (``cluster.core.settings_schema``) over the ``inherited`` values."""
        raw = self.mapping(v, key, YAML_SETTINGS)
        for k, value in raw.items():
            problem = YAML_SETTINGS[k].check(value)
            if problem:
                raise self.fail(f"{key}.{k}", problem)
        return {**inherited, **raw}

    def nodes(self, v: Any, data_dir: Path, defaults: Mapping[str, Any]
              ) -> tuple[NodeConfig, ...]:
        if not isinstance(v, list) or not v:
            raise self.fail("nodes", "expected a non-empty list of nodes")
        if len(v) > MAX_NODES:
            raise self.fail("nodes", f"at most {MAX_NODES} nodes, got {len(v)}")
        nodes = tuple(self.node(item, f"nodes[{i}]", data_dir, defaults)
                      for i, item in enumerate(v))
        self.unique(nodes, "name", lambda n: n.name)
        self.unique(nodes, "port", lambda n: n.port)
        self.unique(nodes, "data_dir", lambda n: n.data_dir)
        return nodes

    def node(self, item: Any, key: str, data_dir: Path, defaults: Mapping[str, Any]
             ) -> NodeConfig:
        raw = self.mapping(item, key, NODE_KEYS)
        name = raw.get("name")
        if not isinstance(name, str) or _str(name) or not all(
                c.isalnum() or c in "-_." for c in name):
            raise self.fail(f"{key}.name", f"expected letters, digits, '-', '_', '.': {name!r}")
        host = raw.get("host", "127.0.0.1")
        if not isinstance(host, str) or _str(host):
            raise self.fail(f"{key}.host", _str(host) or "")
        port = raw.get("port")
        if not isinstance(port, int) or _int(1, 65535)(port):
            raise self.fail(f"{key}.port", _int(1, 65535)(port) or "")
        ndir = self.directory(raw.get("data_dir", name), f"{key}.data_dir", data_dir)
        settings = self.settings(raw.get("settings"), f"{key}.settings", defaults)
        return NodeConfig(name, host, port, ndir, settings)

    def unique(self, nodes: tuple[NodeConfig, ...], attr: str,
               val: Callable[[Any], Any]) -> None:
        seen: dict[Any, int] = {}
        for i, n in enumerate(nodes):
            v = val(n)
            if v in seen:
                shown = getattr(n, attr)
                raise self.fail(f"nodes[{i}].{attr}",
                                f"{shown} is also used by nodes[{seen[v]}]")
            seen[v] = i

    def control_not_a_node(self, control: str, nodes: tuple[NodeConfig, ...]) -> None:
        port = control_port(control)
        for i, n in enumerate(nodes):
            if n.port == port:
                raise self.fail(f"nodes[{i}].port", f"{port} is also the control port")


    def status_not_taken(self, sup: SupervisorConfig, control: str,
                         nodes: tuple[NodeConfig, ...]) -> None:
        """The HTTP listeners' ports are used by nothing else of the cluster."""
        taken = {control_port(control): "the control port"}
        taken.update({n.port: f"the port of nodes[{i}]" for i, n in enumerate(nodes)})
        for key, (_, port) in sup.http_listeners():
            if port in taken:
                raise self.fail(key, f"{port} is also {taken[port]}")
            taken[port] = key


    def metrics_not_taken(self, sup: SupervisorConfig, control: str,
                          nodes: tuple[NodeConfig, ...]) -> None:
        """Every node's metricsPort (when on) is a port nothing else of the cluster uses."""
        taken = {control_port(control): "the control port"}
        taken.update({port: key for key, (_, port) in sup.http_listeners()})
        taken.update({n.port: f"the port of nodes[{i}]" for i, n in enumerate(nodes)})
        for i, port in metrics_ports(nodes):
            if port in taken:
                raise self.fail(f"nodes[{i}].settings.metricsPort",
                                f"{port} is also {taken[port]}")
            taken[port] = f"the metricsPort of nodes[{i}]"


def metrics_ports(nodes: tuple[NodeConfig, ...]) -> list[tuple[int, int]]:
    """(node index, metricsPort) of the nodes that serve /metrics."""
    return [(i, int(n.settings.get("metricsPort", 0))) for i, n in enumerate(nodes)
            if n.settings.get("metricsPort", 0)]


def control_port(control: str) -> int:
    return int(control.rpartition(":")[2])


# -------------------------------------------------------------- start checks


def check_startable(cfg: ClusterConfig) -> None:
    """Ports free and data directories usable, or a ConfigError naming the key."""
    host = cfg.control[len("tcp://"):].rpartition(":")[0].strip("[]")
    _check_port(cfg, "control", "127.0.0.1" if host == "localhost" else host,
                control_port(cfg.control))
    for i, n in enumerate(cfg.nodes):
        _check_port(cfg, f"nodes[{i}].port", n.host, n.port)
    for i, port in metrics_ports(cfg.nodes):
        host = str(cfg.nodes[i].settings.get("metricsHost", "127.0.0.1"))
        _check_port(cfg, f"nodes[{i}].settings.metricsPort", host, port)
    for key, (host, port) in cfg.supervisor.http_listeners():
        _check_port(cfg, key, host, port)
    _check_dir(cfg, "data_dir", cfg.data_dir)
    for i, n in enumerate(cfg.nodes):
        _check_dir(cfg, f"nodes[{i}].data_dir", n.data_dir)


def check_node_startable(cfg: ClusterConfig, name: str) -> None:
    """One node's port free and data directory usable (a node added at run time)."""
    i, n = next((i, n) for i, n in enumerate(cfg.nodes) if n.name == name)
    _check_port(cfg, f"nodes[{i}].port", n.host, n.port)
    if n.settings.get("metricsPort", 0):
        _check_port(cfg, f"nodes[{i}].settings.metricsPort",
                    str(n.settings.get("metricsHost", "127.0.0.1")), int(n.settings["metricsPort"]))
    _check_dir(cfg, f"nodes[{i}].data_dir", n.data_dir)


def port_in_use(host: str, port: int) -> str | None:
    """None if ``host:port`` can be bound now, else the reason."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return "is in use by another process"
        return f"cannot be bound: {exc.strerror or exc}"
    return None


def _check_port(cfg: ClusterConfig, key: str, host: str, port: int) -> None:
    problem = port_in_use(host, port)
    if problem:
        raise ConfigError(f"{cfg.path}: {key}: {host}:{port} {problem}")


def _check_dir(cfg: ClusterConfig, key: str, d: Path) -> None:
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{cfg.path}: {key}: cannot create {d}: {exc.strerror or exc}") from exc
    if not os.access(d, os.W_OK | os.X_OK):
        raise ConfigError(f"{cfg.path}: {key}: {d} is not writable")
