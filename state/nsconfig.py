"""Runtime NameServer configuration, shared by every worker through the `config` table.

Values are stored as strings under their Java property names; keys, types and
ranges come from `cluster.core.settings_schema`. The node loads them once at start
(`initialize`); UPDATE_NAMESRV_CONFIG changes them (`update`) and rewrites
`configStorePath` atomically inside the same write transaction; GET_NAMESRV_CONFIG
prints them (`properties_text`). Settings marked live in the schema are read from
here at each use, so an update takes effect at once.

GET_NAMESRV_CONFIG answers what Java 4.9.8 answers: its config fields and the
unknown keys of the node's file, in the order Java's `Properties` iterates them
(`java_order`). pynamesrv's own keys are added, all keys sorted, when asked with
`all=true`.

Differences from Java, on purpose: values containing a line break are refused
(Java writes them verbatim, which lets a caller inject lines into the file);
values that do not fit the key's type or range are refused (Java silently keeps
the old value); pynamesrv's settings that cannot change while the node runs are
refused; String values are trimmed (5.x); a value longer than `VALUE_MAX_CHARS`, or an
update that would make the stored config larger than `CONFIG_MAX_BYTES`, is refused
(Java's values are typed fields and need no such bound; here any client could
otherwise make every GET_NAMESRV_CONFIG reply megabytes long). A refused update is a
`Refused` outcome (which rule, and the text for the caller); the request processors
choose the response code. A config file over these bounds written by an older version
is still loaded (`oversized` names it, for one warning at start); an update that does
not make it larger is still applied, so it can be shrunk at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from cluster.core.javaorder import JavaProperties
from cluster.core.protocol.properties import format_properties
from cluster.core.settings_schema import (
    BY_KEY,
    JAVA_CLASSES,
    PROTECTED_KEYS,
    Update,
    java_fields,
    text_defaults,
)
from state.kvconfig import write_atomic
from state.store import Store, Txn

BLACKLIST_REMARK = "Can not update config in black list."
PARSE_REMARK = "string2Properties error"
ORDER_KEY = "config_order"  # meta table: GET_NAMESRV_CONFIG's Java key order
VALUE_MAX_CHARS = 4096  # one value (PATH_MAX: a path is the longest legitimate value)
CONFIG_MAX_BYTES = 64 << 10  # every key and value, as persisted


class Refusal(Enum):
    """Why an update is refused as a whole (nothing of it is applied)."""

    BLACK_LIST = "black list"  # a key of `blacklist`
    LINE_BREAK = "line break"  # a key or value holding a line break
    NOT_UPDATABLE = "not updatable"  # a setting fixed while the node runs
    INVALID_VALUE = "invalid value"  # a value that does not fit its key's type or range
    TOO_LARGE = "too large"  # a value, or the whole config, over its bound


@dataclass(frozen=True, slots=True)
class Refused:
    reason: Refusal
    message: str


def init(t: Txn, props: dict[str, str], file_keys: Iterable[str]) -> None:
    """Node start: schema defaults overlaid with `props`; the Java order of the answer."""
    for key, value in {**text_defaults(), **props}.items():
        t.put("config", key, value)
    t.put("meta", ORDER_KEY, java_order(file_keys))


def initialize(store: Store, props: dict[str, str], config_store_path: str,
               kv_config_path: str, file_keys: Sequence[str] | None = None) -> None:
    """`init` in its own transaction, with the node's resolved file paths.

    `file_keys` are the keys of the node's config file in file order (default: `props`).
    """
    with store.write() as t:
        init(t, {**props, "configStorePath": config_store_path,
                 "kvConfigPath": kv_config_path},
             props if file_keys is None else file_keys)


def get(t: Txn, key: str) -> str | None:
    return t.get("config", key)


def get_bool(t: Txn, key: str) -> bool:
    """Java `Boolean.parseBoolean` of the stored value, the schema default when unset."""
    value = t.get("config", key)
    if value is None:
        return bool(BY_KEY[key].default)
    return str(value).strip().lower() == "true"


def get_int(t: Txn, key: str) -> int:
    """The stored value of an integer setting, the schema default when unset."""
    value = t.get("config", key)
    return int(value) if value is not None else int(BY_KEY[key].default or 0)


def all_properties(t: Txn) -> dict[str, str]:
    return dict(t.items("config"))


def blacklist(t: Txn) -> set[str]:
    configured = get(t, "configBlackList") or ""
    return set(PROTECTED_KEYS) | {k.strip() for k in configured.split(";") if k.strip()}


def properties_text(t: Txn, everything: bool = False) -> str:
    """GET_NAMESRV_CONFIG body: Java's keys in Java's order, or (`everything`) all, sorted."""
    props = all_properties(t)
    if everything:
        return format_properties(props)
    order = t.get("meta", ORDER_KEY) or []
    return format_properties({k: props[k] for k in order if k in props}, sort=False)


# ---------------------------------------------------------------- updates


def _normalize(key: str, value: str) -> str:
    """The stored form of `value`; ValueError when it does not fit the key."""
    setting = BY_KEY.get(key)
    if setting is None:
        return value.strip()
    return setting.text(setting.parse(value))


def check(t: Txn, props: dict[str, str]) -> Refused | None:
    """Why an update request must be refused, or None when it may be applied."""
    if blacklist(t) & set(props):
        return Refused(Refusal.BLACK_LIST, BLACKLIST_REMARK)
    for key, value in props.items():
        if "\r" in key or "\n" in key or "\r" in value or "\n" in value:
            return Refused(Refusal.LINE_BREAK,
                           f"Can not update config: {key.strip()!r} contains a line break.")
    too_large = _too_large(t, props)
    if too_large is not None:
        return too_large
    for key in props:
        setting = BY_KEY.get(key)
        if setting is not None and setting.update is Update.REFUSED:
            return Refused(Refusal.NOT_UPDATABLE, f"Can not update config: {key} cannot "
                           "change while the node runs; set it in the node's config file "
                           "and restart.")
    known = all_properties(t)
    for key, value in props.items():
        try:
            if key in known:
                _normalize(key, value)
        except ValueError as exc:
            return Refused(Refusal.INVALID_VALUE,
                           f"Can not update config: bad value for {key}: {exc}.")
    return None


def _too_large(t: Txn, props: dict[str, str]) -> Refused | None:
    """Refused when a value is over ``VALUE_MAX_CHARS`` or the update would grow the stored
    config past ``CONFIG_MAX_BYTES``."""
    for key, value in props.items():
        if len(value) > VALUE_MAX_CHARS:
            return Refused(Refusal.TOO_LARGE, f"Can not update config: the value of "
                           f"{key[:64]!r} has {len(value)} characters, at most "
                           f"{VALUE_MAX_CHARS}.")
    known = all_properties(t)
    before = config_bytes(known)
    after = config_bytes({**known, **{k: v.strip() for k, v in props.items() if k in known}})
    if after > CONFIG_MAX_BYTES and after > before:
        return Refused(Refusal.TOO_LARGE, f"Can not update config: it would take {after} "
                       f"bytes, at most {CONFIG_MAX_BYTES}.")
    return None


def config_bytes(props: dict[str, str]) -> int:
    """The size of ``props`` as persisted (``key=value`` lines, UTF-8; escapes aside)."""
    return sum(len(k.encode()) + len(v.encode()) + 2 for k, v in props.items())


def oversized(props: dict[str, str]) -> str | None:
    """What is over the bounds in a config loaded at start (an older version wrote it), or
    None: it is loaded all the same."""
    long = [k for k, v in props.items() if len(v) > VALUE_MAX_CHARS]
    size = config_bytes(props)
    if not long and size <= CONFIG_MAX_BYTES:
        return None
    return (f"config of {size} bytes (at most {CONFIG_MAX_BYTES}); values over "
            f"{VALUE_MAX_CHARS} characters: {', '.join(long[:8]) or 'none'}")


def update(t: Txn, props: dict[str, str]) -> Refused | None:
    """UPDATE_NAMESRV_CONFIG inside a write txn: check, apply known keys, persist the file.

    None when applied; a refused update changes nothing."""
    refused = check(t, props)
    if refused is not None:
        return refused
    known = all_properties(t)
    for key, value in props.items():
        if key in known:
            t.put("config", key, _normalize(key, value))
    persist(t)
    return None


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


# ---------------------------------------------------------------- Java's order


def java_order(file_keys: Iterable[str]) -> list[str]:
    """Key order of Java 4.9.8's GET_NAMESRV_CONFIG for a node started with these file keys.

    Java's `Configuration` puts the fields of NamesrvConfig, then of NettyServerConfig,
    then the `-c` file's keys into one `Properties`, each group taken in the order its own
    `Properties` iterates. pynamesrv's own keys are left out, as if the file lacked them.
    """
    merged = JavaProperties()
    groups = [java_fields(c) for c in JAVA_CLASSES]
    groups.append([k for k in file_keys if k not in BY_KEY or BY_KEY[k].java])
    for group in groups:
        for key in JavaProperties.of(group).ordered():
            merged.put(key)
    return merged.ordered()
