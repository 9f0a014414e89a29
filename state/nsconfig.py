"""Runtime NameServer configuration, shared by every worker through the `config` table.

Values are stored as strings under their Java property names. The node loads
them once at start (`init`); UPDATE_NAMESRV_CONFIG changes them (`update`) and
rewrites `configStorePath` atomically inside the same write transaction;
GET_NAMESRV_CONFIG prints them (`properties_text`, sorted by key as in 5.x).

Differences from Java, on purpose: values containing a line break are refused
(Java writes them verbatim, which lets a caller inject lines into the file);
values that do not fit the key's type or range are refused with SYSTEM_ERROR
(Java silently keeps the old value but still writes the bad text to the file,
which can stop the next start); String values are trimmed (5.x).
"""

from __future__ import annotations

from cluster.protocol.codes import ResponseCode
from cluster.protocol.properties import format_properties
from state.kvconfig import write_atomic
from state.store import Store, Txn

DEFAULT_BLACKLIST = "configBlackList;configStorePath;kvConfigPath"
FIXED_BLACKLIST = frozenset({"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"})
BLACKLIST_REMARK = "Can not update config in black list."
PARSE_REMARK = "string2Properties error"

BOOL_KEYS: dict[str, bool] = {
    "orderMessageEnable": False,
    "returnOrderTopicConfigToBroker": True,
    "enableAllTopicList": True,
    "enableTopicList": True,
}
INT_KEYS: dict[str, tuple[int, int, int]] = {  # key: (default, min, max)
    "listenPort": (9876, 1, 65535),
    "scanNotActiveBrokerInterval": (5000, 10, 3_600_000),
    "brokerChannelExpiredTime": (120_000, 100, 86_400_000),
    "serverChannelMaxIdleTimeSeconds": (120, 1, 86_400),
    "frameMaxLength": (16_777_216, 1024, 1 << 30),
    "ioWorkers": (1, 1, 64),
    "businessWorkers": (2, 1, 64),
    "ioMaxPending": (10_000, 1, 10_000_000),
    "businessWindow": (256, 1, 100_000),
    "shutdownDrainMillis": (5000, 0, 600_000),
}
STR_KEYS: dict[str, str] = {
    "bindAddress": "127.0.0.1",
    "nodeName": "",
    "kvConfigPath": "",
    "configStorePath": "",
    "configBlackList": DEFAULT_BLACKLIST,
    "rocketmqHome": "",
}


def defaults() -> dict[str, str]:
    out = {k: "true" if v else "false" for k, v in BOOL_KEYS.items()}
    out.update({k: str(v[0]) for k, v in INT_KEYS.items()})
    out.update(STR_KEYS)
    return out


def init(t: Txn, props: dict[str, str]) -> None:
    """Node start: defaults overlaid with the node's properties (file keys + resolved values)."""
    for key, value in {**defaults(), **props}.items():
        t.put("config", key, value)


def initialize(store: Store, props: dict[str, str], config_store_path: str,
               kv_config_path: str) -> None:
    """`init` in its own transaction, with the node's resolved file paths."""
    with store.write() as t:
        init(t, {**props, "configStorePath": config_store_path,
                 "kvConfigPath": kv_config_path})


def get(t: Txn, key: str) -> str | None:
    return t.get("config", key)


def get_bool(t: Txn, key: str) -> bool:
    """Java `Boolean.parseBoolean` of the stored value, the default when unset."""
    value = t.get("config", key)
    if value is None:
        return BOOL_KEYS.get(key, False)
    return str(value).strip().lower() == "true"


def get_int(t: Txn, key: str) -> int:
    value = t.get("config", key)
    try:
        return int(value)
    except (TypeError, ValueError):
        return INT_KEYS[key][0]


def all_properties(t: Txn) -> dict[str, str]:
    return dict(t.items("config"))


def blacklist(t: Txn) -> set[str]:
    configured = get(t, "configBlackList") or ""
    return set(FIXED_BLACKLIST) | {k.strip() for k in configured.split(";") if k.strip()}


def properties_text(t: Txn) -> str:
    """GET_NAMESRV_CONFIG body: `key=value` lines sorted by key (empty when nothing is set)."""
    return format_properties(all_properties(t))


def _normalize(key: str, value: str) -> str | None:
    """The stored form of `value`, or None when it does not fit the key."""
    value = value.strip()
    if key in BOOL_KEYS:
        return "true" if value.lower() == "true" else "false"
    if key in INT_KEYS:
        _, lo, hi = INT_KEYS[key]
        try:
            number = int(value)
        except ValueError:
            return None
        return str(number) if lo <= number <= hi else None
    return value


def check(t: Txn, props: dict[str, str]) -> tuple[int, str | None]:
    """(code, remark) for an update request; SUCCESS means it may be applied."""
    if blacklist(t) & set(props):
        return ResponseCode.NO_PERMISSION, BLACKLIST_REMARK
    for key, value in props.items():
        if "\r" in key or "\n" in key or "\r" in value or "\n" in value:
            return (ResponseCode.SYSTEM_ERROR,
                    f"Can not update config: {key.strip()!r} contains a line break.")
    known = all_properties(t)
    for key, value in props.items():
        if key in known and _normalize(key, value) is None:
            return ResponseCode.SYSTEM_ERROR, f"Can not update config: bad value for {key}."
    return ResponseCode.SUCCESS, None


def update(t: Txn, props: dict[str, str]) -> tuple[int, str | None]:
    """UPDATE_NAMESRV_CONFIG inside a write txn: check, apply known keys, persist the file."""
    code, remark = check(t, props)
    if code != ResponseCode.SUCCESS:
        return code, remark
    known = all_properties(t)
    changed = {k: _normalize(k, v) for k, v in props.items() if k in known}
    for key, value in changed.items():
        t.put("config", key, value)
    persist(t)
    return ResponseCode.SUCCESS, None


def persist(t: Txn) -> None:
    """Write every property to `configStorePath` (sorted, escaped for Properties.load)."""
    path = get(t, "configStorePath")
    if not path:
        return
    lines = "".join(f"{k}={_escape(v)}\n" for k, v in sorted(all_properties(t).items()))
    write_atomic(path, lines.encode("utf-8"))


def _escape(value: str) -> str:
    out = value.replace("\\", "\\\\")
    if out[:1] in (" ", "\t", "\f"):
        out = "\\" + out
    return out
