"""The one schema of node settings: every key a node knows, its type, default and range.

Everything that handles node settings is derived from ``SETTINGS``: cluster.yaml
validation (``cluster.core.config``), the node's ``namesrv.properties`` rendered by the
supervisor, the node's loading of that file (``worker.controller.settings``), the shared runtime
config behind GET/UPDATE_NAMESRV_CONFIG (``state.nsconfig``) and the settings tables
of README.md and docs/architecture.md (``python -m cluster.core.settings_schema --markdown``).

Pure: imports nothing of the project but ``cluster.core.errors`` and the release names of
``cluster.core.protocol.dialect``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from cluster.core.errors import ConfigError
from cluster.core.protocol.dialect import DEFAULT as DEFAULT_DIALECT
from cluster.core.protocol.dialect import NAMES as DIALECT_NAMES

Value = int | bool | str
INT32 = (-(2**31), 2**31 - 1)
_INT_TEXT = re.compile(r"[+-]?[0-9]+")


class Update(Enum):
    """What UPDATE_NAMESRV_CONFIG does with a key."""

    LIVE = "applied at once"
    RESTART = "kept for the next start"
    IGNORED = "accepted, no effect"
    REFUSED = "refused"
    PROTECTED = "refused (black list)"


def value_text(value: Value) -> str:
    """Java's ``toString`` of a setting value: ``true``/``false``, decimal, the string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Kind(Enum):
    INT = "int"
    BOOL = "bool"
    STR = "str"
    PATH = "path"  # a non-empty string; the node resolves a relative path against its data dir


@dataclass(frozen=True)
class Setting:
    """One node setting, named as in Java's ``namesrv.properties`` where RocketMQ has one.

    ``default`` None: derived when the node starts (``meaning`` says how).
    ``java``: the Java 4.9.8 class that declares the field ("" for pynamesrv's own keys);
    those keys, in declaration order, make up the default GET_NAMESRV_CONFIG answer of a
    node in 4.9.8 mode. ``java5``: the same for Java 5.5.0 (a node in 5.x mode answers
    those keys, sorted).
    ``yaml``: settable in cluster.yaml (``defaults`` and ``nodes[].settings``).
    ``attr``: the node's ``NodeSettings`` attribute, "" when only the shared runtime
    config holds the value (read at each use).
    """

    key: str
    kind: Kind
    default: Value | None
    meaning: str
    lo: int = 0
    hi: int = 0
    unit: str = ""
    update: Update = Update.REFUSED
    yaml: bool = False
    java: str = ""
    java5: str = ""
    attr: str = ""
    choices: tuple[str, ...] = ()  # the values a string setting may take, when restricted

    def check(self, value: Any) -> str | None:
        """The problem with a typed value (as YAML gives it), or None."""
        if self.kind is Kind.INT:
            if isinstance(value, bool) or not isinstance(value, int):
                return f"expected an integer, got {value!r}"
            return self._range(value)
        if self.kind is Kind.BOOL:
            return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
        if not isinstance(value, str):
            return f"expected a one-line string, got {value!r}"
        return self._line(value)

    def parse(self, raw: str) -> Value:
        """The value of a properties text (file or UPDATE_NAMESRV_CONFIG); ValueError if bad."""
        text = raw.strip()
        if self.kind is Kind.BOOL:
            return text.lower() == "true"  # Java Boolean.parseBoolean
        if self.kind is Kind.INT:
            if not _INT_TEXT.fullmatch(text):
                raise ValueError(f"{raw!r} is not an integer")
            number = int(text)
            problem = self._range(number)
        else:
            number, problem = 0, self._line(text)
        if problem:
            raise ValueError(problem)
        return number if self.kind is Kind.INT else text

    def text(self, value: Value) -> str:
        """The properties text of a value, as Java prints it."""
        return value_text(value)

    def _range(self, number: int) -> str | None:
        if not self.lo <= number <= self.hi:
            return f"{number} is outside [{self.lo}, {self.hi}]"
        return None

    def _line(self, text: str) -> str | None:
        if "\n" in text or "\r" in text:
            return f"{text!r} contains a line break"
        if self.kind is Kind.PATH and not text:
            return "expected a non-empty path"
        if self.choices and text not in self.choices:
            return f"{text!r} is not one of {', '.join(self.choices)}"
        return None


_NS = "NamesrvConfig"
_NETTY = "NettyServerConfig"
_I, _B, _S, _P = Kind.INT, Kind.BOOL, Kind.STR, Kind.PATH
_U = Update


def _netty_knob(key: str, kind: Kind, default: Value, meaning: str, since5: bool = False
                ) -> Setting:
    """A Netty setting pynamesrv accepts and reports with Java's default, and ignores."""
    lo, hi = INT32 if kind is Kind.INT else (0, 0)
    return Setting(key, kind, default, f"Java Netty setting; {meaning}", lo, hi,
                   update=_U.IGNORED, java="" if since5 else _NETTY, java5=_NETTY)


def _pool_knob(key: str, default: int, meaning: str) -> Setting:
    """A 5.x NamesrvConfig thread-pool setting pynamesrv accepts and reports, and ignores."""
    return Setting(key, Kind.INT, default, f"Java 5.x setting; {meaning}", *INT32,
                   update=_U.IGNORED, java5=_NS)


SETTINGS: tuple[Setting, ...] = (
    # NamesrvConfig 4.9.8, in declaration order.
    Setting("rocketmqHome", _S, None, "`$ROCKETMQ_HOME`, else the pynamesrv installation "
            "directory; informational", update=_U.PROTECTED, java=_NS, java5=_NS),
    Setting("kvConfigPath", _P, "kvConfig.json", "KV config file (Java format), relative "
            "to the node's data dir", update=_U.PROTECTED, yaml=True, java=_NS, java5=_NS,
            attr="kv_config_path"),
    Setting("configStorePath", _P, None, "where UPDATE_NAMESRV_CONFIG persists: the "
            "`--config` file, else `namesrv.properties` in the data dir", update=_U.PROTECTED,
            java=_NS, java5=_NS, attr="config_store_path"),
    Setting("productEnvName", _S, "center", "Java cluster-test environment name",
            update=_U.IGNORED, java=_NS, java5=_NS),
    Setting("clusterTest", _B, False, "Java cluster-test mode (not implemented)",
            update=_U.IGNORED, java=_NS, java5=_NS),
    Setting("orderMessageEnable", _B, False, "`orderTopicConf` in route replies",
            update=_U.LIVE, yaml=True, java=_NS, java5=_NS),
    Setting("configBlackList", _S, "configBlackList;configStorePath;kvConfigPath",
            "`;`-separated keys UPDATE_NAMESRV_CONFIG refuses (always also `configBlackList`, "
            "`configStorePath`, `kvConfigPath`, `rocketmqHome`, `aclFile`)",
            update=_U.PROTECTED, yaml=True, java=_NS, java5=_NS),
    # NettyServerConfig 4.9.8, in declaration order.
    Setting("listenPort", _I, 9876, "TCP port (`--port` wins)", 1, 65535,
            update=_U.RESTART, java=_NETTY, java5=_NETTY, attr="port"),
    _netty_knob("serverWorkerThreads", _I, 8, "request threads"),
    _netty_knob("serverCallbackExecutorThreads", _I, 0, "callback threads"),
    _netty_knob("serverSelectorThreads", _I, 3, "selector threads"),
    _netty_knob("serverOnewaySemaphoreValue", _I, 256, "server-initiated oneway calls"),
    _netty_knob("serverAsyncSemaphoreValue", _I, 64, "server-initiated async calls"),
    Setting("serverChannelMaxIdleTimeSeconds", _I, 120, "idle connections are closed after "
            "this", 1, 86_400, "s", _U.RESTART, yaml=True, java=_NETTY, java5=_NETTY,
            attr="idle_timeout_s"),
    _netty_knob("serverSocketSndBufSize", _I, 0, "socket send buffer"),
    _netty_knob("serverSocketRcvBufSize", _I, 0, "socket receive buffer"),
    _netty_knob("writeBufferHighWaterMark", _I, 0, "write buffer high water mark"),
    _netty_knob("writeBufferLowWaterMark", _I, 0, "write buffer low water mark"),
    _netty_knob("serverSocketBacklog", _I, 1024, "listen backlog"),
    _netty_knob("serverPooledByteBufAllocatorEnable", _B, True, "pooled buffers"),
    _netty_knob("useEpollNativeSelector", _B, False, "epoll transport"),
    # NamesrvConfig and NettyServerConfig 5.5.0 keys 4.9.8 lacks.
    _pool_knob("clientRequestThreadPoolNums", 8, "route lookup threads"),
    _pool_knob("defaultThreadPoolNums", 16, "request threads"),
    _pool_knob("clientRequestThreadPoolQueueCapacity", 50_000, "route lookup queue"),
    _pool_knob("defaultThreadPoolQueueCapacity", 10_000, "request queue"),
    _pool_knob("unRegisterBrokerQueueCapacity", 3000, "queued unregistrations (pynamesrv "
               "applies each at once)"),
    Setting("supportActingMaster", _B, False, "route answers show the lowest-id slave of a "
            "group whose master is gone as its master (id 0), read-only, when the group "
            "registered with `enableActingMaster`", update=_U.LIVE, yaml=True, java5=_NS),
    Setting("notifyMinBrokerIdChanged", _B, False, "Java 5.x setting; NameServer-to-broker "
            "notifications (not implemented)", update=_U.IGNORED, java5=_NS),
    Setting("enableControllerInNamesrv", _B, False, "Java 5.x setting; the embedded DLedger "
            "controller (not implemented)", update=_U.IGNORED, java5=_NS),
    Setting("needWaitForService", _B, False, "route lookups are answered SYSTEM_ERROR `name "
            "server not ready` until `waitSecondsForService` after the node started",
            update=_U.LIVE, yaml=True, java5=_NS),
    Setting("waitSecondsForService", _I, 45, "the not-ready window of `needWaitForService`",
            0, 86_400, "s", _U.LIVE, yaml=True, java5=_NS),
    Setting("deleteTopicWithBrokerRegistration", _B, False, "a master's (or acting master's) "
            "registration removes its queue data from the topics its table lacks (no static "
            "topics in the table)", update=_U.LIVE, yaml=True, java5=_NS),
    _netty_knob("serverNettyWorkerGroupEnable", _B, True, "worker event loop group",
                since5=True),
    Setting("enableShutdownGracefully", _B, False, "on SIGTERM, answer GO_AWAY (1500) to "
            "clients newer than 5.3.1 for `shutdownWaitTimeSeconds` before stopping",
            update=_U.LIVE, yaml=True, java5=_NETTY),
    Setting("shutdownWaitTimeSeconds", _I, 30, "GO_AWAY window of `enableShutdownGracefully`",
            0, 3600, "s", _U.LIVE, yaml=True, java5=_NETTY),
    # pynamesrv's own keys (5.x names where 5.x has one).
    Setting("rocketmqVersion", _S, DEFAULT_DIALECT.value, "the Java release the node follows "
            "where 4.9.8 and 5.x answer differently (README \"Compatibility\"); either serves "
            "4.9 and 5.x brokers and clients", yaml=True, attr="rocketmq_version",
            choices=DIALECT_NAMES),
    Setting("bindAddress", _S, "127.0.0.1", "listen address (`--host` wins)", java5=_NETTY,
            attr="host"),
    Setting("nodeName", _S, None, "name in logs and snapshots (`--name` wins), else "
            "`node-<port>`", attr="name"),
    Setting("returnOrderTopicConfigToBroker", _B, True, "order-topic KV table in "
            "REGISTER_BROKER replies", update=_U.LIVE, yaml=True, java5=_NS),
    Setting("enableAllTopicList", _B, True, "allow request code 206", update=_U.LIVE,
            yaml=True, java5=_NS),
    Setting("enableTopicList", _B, True, "allow request codes 224 and 311–313",
            update=_U.LIVE, yaml=True, java5=_NS),
    Setting("scanNotActiveBrokerInterval", _I, 5000, "time between broker expiry scans (one "
            "scan per node)", 10, 3_600_000, "ms", _U.LIVE, yaml=True, java5=_NS),
    Setting("brokerChannelExpiredTime", _I, 120_000, "time without a heartbeat before a "
            "broker expires", 100, 86_400_000, "ms", _U.LIVE, yaml=True),
    Setting("frameMaxLength", _I, 16_777_216, "largest frame accepted (`total + 4`)",
            1024, 1 << 30, "bytes", yaml=True, attr="frame_max"),
    Setting("ioWorkers", _I, 1, "I/O worker processes (SO_REUSEPORT on one port)", 1, 64,
            "processes", yaml=True, attr="io_workers"),
    Setting("ioLargeWorker", _B, True, "one more I/O worker, niced by `businessWriteNice`, "
            "takes over each plain connection whose next frame is 256 KiB or more (a "
            "broker's registration), so such bodies never cost the I/O workers that serve "
            "route lookups; costs 6-15 MB and registration latency under a registration "
            "storm (README \"Inside a node\")", yaml=True, attr="io_large_worker"),
    Setting("businessWorkers", _I, 2, "business worker processes", 1, 64, "processes",
            yaml=True, attr="business_workers"),
    Setting("businessReadWorkers", _I, 1, "of those, how many serve only route lookups "
            "(code 105); at most `businessWorkers - 1`", 0, 64, "processes", yaml=True,
            attr="business_read_workers"),
    Setting("businessWriteNice", _I, 19, "CPU niceness of the business workers that take "
            "writes: route lookups win when the cores are contended", 0, 19, yaml=True,
            attr="business_write_nice"),
    Setting("ioMaxPending", _I, 10_000, "requests one I/O worker queues for the business "
            "pool before answering `SYSTEM_BUSY`", 1, 10_000_000, "requests", yaml=True,
            attr="io_max_pending"),
    Setting("businessWindow", _I, 256, "requests one business worker may have in flight "
            "from one I/O worker", 1, 100_000, "requests", yaml=True, attr="business_window"),
    Setting("shutdownDrainMillis", _I, 5000, "bound for answering in-flight requests on "
            "SIGTERM", 0, 600_000, "ms", yaml=True, attr="shutdown_drain_ms"),
    Setting("maxConnections", _I, 20_000, "open connections per node (each I/O worker takes "
            "its share); one more is closed at once", 1, 1_000_000, "connections", yaml=True,
            attr="max_connections"),
    Setting("maxConnectionsPerAddress", _I, 5000, "open connections from one remote address "
            "(per I/O worker); one more is closed at once", 1, 1_000_000, "connections",
            yaml=True, attr="max_connections_per_address"),
    Setting("headerMaxLength", _I, 65_536, "largest request header; a longer one closes the "
            "connection as soon as its length is read", 64, 16_777_215, "bytes", yaml=True,
            attr="header_max"),
    Setting("connectionMaxPendingBytes", _I, 64 << 20, "request bytes read from one connection "
            "and not answered yet, plus its unsent reply bytes: above this the node stops "
            "reading from it until half has drained", 65_536, 1 << 31, "bytes", yaml=True,
            attr="pending_max"),
    Setting("connectionMaxPendingRequests", _I, 1000, "requests read from one connection and "
            "not answered yet (route lookups answered at once aside): above this the node "
            "stops reading from it until half are answered", 1, 1_000_000, "requests",
            yaml=True, attr="requests_max"),
    Setting("frameReadTimeoutSeconds", _I, 30, "a request must arrive whole within this after "
            "its first byte, else the connection is closed (slow senders)", 1, 3600, "s",
            yaml=True, attr="frame_timeout_s"),
    Setting("tls.server.mode", _S, "disabled", "TLS on the listen port, as RocketMQ's "
            "`tls.server.mode`: `permissive` takes TLS and plain connections (told apart by "
            "their first byte), `enforcing` only TLS", yaml=True, attr="tls_mode",
            choices=("disabled", "permissive", "enforcing")),
    Setting("tls.server.certPath", _S, "", "PEM certificate chain of the node (needed unless "
            "`tls.server.mode` is `disabled`); relative to the data dir", yaml=True,
            attr="tls_cert"),
    Setting("tls.server.keyPath", _S, "", "PEM private key of the node, unencrypted (protect "
            "it with file permissions; no password is kept in the config); relative to the "
            "data dir", yaml=True, attr="tls_key"),
    Setting("tls.server.need.client.auth", _S, "none", "client certificates: `none`, "
            "`optional` (checked when sent) or `require`", yaml=True, attr="tls_client_auth",
            choices=("none", "optional", "require")),
    Setting("tls.server.trustCertPath", _S, "", "PEM CA certificates client certificates "
            "must chain to (needed unless `tls.server.need.client.auth` is `none`); relative "
            "to the data dir", yaml=True, attr="tls_trust"),
    Setting("connectionWriteTimeoutSeconds", _I, 60, "a connection whose replies cannot be "
            "written for this long (its peer reads nothing) is closed", 1, 3600, "s",
            yaml=True, attr="write_timeout_s"),
    Setting("aclEnable", _B, False, "requests that change state must be signed by an account "
            "of `aclFile`, admin operations by an admin account (RocketMQ ACL 1.0; README "
            "\"ACL\")", yaml=True),
    Setting("aclFile", _P, "plain_acl.yml", "accounts of `aclEnable` (RocketMQ "
            "`plain_acl.yml` format), relative to the node's data dir; re-read when it "
            "changes", update=_U.PROTECTED, yaml=True),
    Setting("aclReadsToo", _B, False, "with `aclEnable`: every other request must be signed "
            "too, by any account", yaml=True),
    Setting("aclStrictSignature", _B, False, "with `aclEnable`: a signed request must also "
            "carry pynamesrv's `StrictSignature`, which covers the request code and the "
            "field names RocketMQ's signature leaves out; stock RocketMQ clients cannot send "
            "it (README \"ACL\")", yaml=True),
    Setting("metricsPort", _I, 0, "HTTP port of the node's Prometheus `/metrics` (README "
            "\"Metrics\"); 0: none", 0, 65535, yaml=True, attr="metrics_port"),
    Setting("metricsHost", _S, "127.0.0.1", "listen address of `metricsPort`", yaml=True,
            attr="metrics_host"),
)

BY_KEY: Mapping[str, Setting] = {s.key: s for s in SETTINGS}
YAML_SETTINGS: Mapping[str, Setting] = {s.key: s for s in SETTINGS if s.yaml}
PROTECTED_KEYS = frozenset(s.key for s in SETTINGS if s.update is Update.PROTECTED)


def java_fields(java_class: str) -> list[str]:
    """The fields of a Java 4.9.8 config class, in declaration order."""
    return [s.key for s in SETTINGS if s.java == java_class]


JAVA5_KEYS = frozenset(s.key for s in SETTINGS if s.java5)  # Java 5.5.0's config fields


JAVA_CLASSES = (_NS, _NETTY)  # registered in this order by Java's NamesrvController


def yaml_defaults() -> dict[str, Value]:
    """Every cluster.yaml setting with its built-in default."""
    return {k: s.default for k, s in YAML_SETTINGS.items() if s.default is not None}


def text_defaults() -> dict[str, str]:
    """Properties text of every setting that has a fixed default."""
    return {s.key: s.text(s.default) for s in SETTINGS if s.default is not None}


def parse_or_fail(source: str, key: str, raw: str) -> Value:
    """``BY_KEY[key].parse(raw)``, a bad value raised as ``ConfigError`` naming source and key."""
    try:
        return BY_KEY[key].parse(raw)
    except ValueError as exc:
        raise ConfigError(f"{source}: key {key}: {exc}") from None


# ------------------------------------------------------------------ markdown


def _code(value: Value | None) -> str:
    if value is None:
        return "derived"
    if isinstance(value, str):
        return f"`{value}`"
    return value_text(value)


def _range(s: Setting) -> str:
    if s.kind is Kind.INT:
        return "any int" if (s.lo, s.hi) == INT32 else f"{s.lo}–{s.hi}"
    if s.kind is Kind.BOOL:
        return "true, false"
    if s.choices:
        return ", ".join(s.choices)
    return "path" if s.kind is Kind.PATH else "one line"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def markdown_cluster() -> str:
    """README table: the settings cluster.yaml accepts."""
    head = ["key", "default", "range", "unit", "UPDATE_NAMESRV_CONFIG", "meaning"]
    rows = [_row([f"`{s.key}`", _code(s.default), _range(s), s.unit, s.update.value,
                  s.meaning]) for s in YAML_SETTINGS.values()]
    return "\n".join([_row(head), _row(["---"] * len(head)), *rows]) + "\n"


def markdown_node() -> str:
    """docs/architecture.md table: every key a node reads from its properties file."""
    head = ["key", "default", "range", "unit", "GET_NAMESRV_CONFIG", "UPDATE_NAMESRV_CONFIG",
            "meaning"]
    rows = [_row([f"`{s.key}`", _code(s.default), _range(s), s.unit, _shown(s),
                  s.update.value, s.meaning]) for s in SETTINGS]
    return "\n".join([_row(head), _row(["---"] * len(head)), *rows]) + "\n"


def _shown(s: Setting) -> str:
    """When GET_NAMESRV_CONFIG lists a key, by the release the node follows."""
    if s.java and s.java5:
        return "always"
    if s.java5:
        return "5.x; 4.9: `all=true`"
    return "`all=true`"


TABLES = {"cluster": markdown_cluster, "node": markdown_node}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cluster.core.settings_schema",
        description="Print a settings table generated from the schema.")
    parser.add_argument("--markdown", choices=sorted(TABLES), nargs="?", const="cluster",
                        required=True, help="cluster: cluster.yaml settings (README); "
                        "node: every node key (docs/architecture.md)")
    args = parser.parse_args(argv)
    sys.stdout.write(TABLES[args.markdown]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
