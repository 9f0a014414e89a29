"""KV config (KVConfigManager): the `kv` table plus its Java-compatible file.

The file (`{"configTable":{namespace:{key:value}}}`, fastjson text) is rewritten
atomically — write a temporary file, fsync, rename, fsync the directory —
inside the same LMDB write transaction that changes the table. Writers are
serialized by LMDB's lock, so the file is never older than the table, and a
write is acknowledged only after both are durable. If the file cannot be
written the transaction aborts and the caller sees the error.
Namespaces are created on first put and never removed.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import orjson

from cluster.core.protocol import fastjson
from state.store import Store, Txn


class KVConfigError(Exception):
    """The KV file exists but cannot be used; the message names the file."""


def get(t: Txn, namespace: str, key: str) -> str | None:
    table = t.get("kv", namespace)
    return None if table is None else table.get(key)


def get_namespace(t: Txn, namespace: str) -> dict[str, str] | None:
    """The namespace's table, or None when the namespace was never created."""
    table: dict[str, str] | None = t.get("kv", namespace)
    return table


def all_config(t: Txn) -> dict[str, dict[str, str]]:
    return dict(t.items("kv"))


def put(t: Txn, path: str | None, namespace: str, key: str, value: str | None) -> None:
    """Store (a None value removes the key, as Java's null does) and persist."""
    table = t.get("kv", namespace) or {}
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value
    t.put("kv", namespace, table)
    persist(t, path)


def delete(t: Txn, path: str | None, namespace: str, key: str) -> None:
    """Remove the key if the namespace exists (never the namespace) and persist."""
    table = t.get("kv", namespace)
    if table is not None and key in table:
        del table[key]
        t.put("kv", namespace, table)
    persist(t, path)


def persist(t: Txn, path: str | None) -> None:
    """Write the whole KV table (as seen by `t`) to `path`; no-op when path is empty."""
    if path:
        text = fastjson.dumpb({"configTable": all_config(t)})
        write_atomic(path, text)


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data`: tmp file, fsync, rename, fsync directory. On failure
    (a full disk) the temporary file is removed and the OSError names `path`."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if exc.errno is None or exc.filename == path:
            raise
        raise OSError(exc.errno, exc.strerror, path) from exc
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def load_file(path: str) -> dict[str, dict[str, str]]:
    """Parse a KV file. Missing or empty → {}; anything unusable raises KVConfigError."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise KVConfigError(f"{path}: cannot read KV config file: {exc}") from exc
    if not raw.strip():
        return {}
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise KVConfigError(f"{path}: KV config file is not valid JSON: {exc}") from exc
    return _validate(path, doc)


def _validate(path: str, doc: Any) -> dict[str, dict[str, str]]:
    table = doc.get("configTable", {}) if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise KVConfigError(f'{path}: expected {{"configTable":{{...}}}}')
    out: dict[str, dict[str, str]] = {}
    for ns, kv in table.items():
        if not isinstance(kv, dict) or not all(isinstance(v, str) for v in kv.values()):
            raise KVConfigError(f"{path}: namespace {ns!r} is not a map of strings")
        out[ns] = dict(kv)
    return out


def load_into(store: Store, path: str) -> int:
    """Node start: fill the kv table from the file at `path`; returns the namespace count."""
    config = load_file(path)
    with store.write() as t:
        for ns, kv in config.items():
            t.put("kv", ns, kv)
    return len(config)
