"""KV config: table + Java-format file written atomically inside the write transaction."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state import kvconfig
from state.store import Store


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 16 << 20)
    yield s
    s.destroy()


def _put(store: Store, path: str, ns: str, key: str, value: str | None) -> None:
    with store.write() as t:
        kvconfig.put(t, path, ns, key, value)


def test_put_get_and_namespace(store: Store, tmp_path: Path) -> None:
    """KVConfigManagerTest.testPutKVConfig."""
    path = str(tmp_path / "kv.json")
    _put(store, path, "ns", "k", "v")
    with store.read() as t:
        assert kvconfig.get(t, "ns", "k") == "v"
        assert kvconfig.get_namespace(t, "ns") == {"k": "v"}
    assert json.loads(Path(path).read_text()) == {"configTable": {"ns": {"k": "v"}}}


def test_delete_from_unknown_namespace(store: Store, tmp_path: Path) -> None:
    """KVConfigManagerTest.testDeleteKVConfig: nothing is created."""
    with store.write() as t:
        kvconfig.delete(t, str(tmp_path / "kv.json"), "nope", "k")
    with store.read() as t:
        assert kvconfig.get_namespace(t, "nope") is None and kvconfig.get(t, "nope", "k") is None


def test_namespace_survives_its_last_key(store: Store, tmp_path: Path) -> None:
    path = str(tmp_path / "kv.json")
    _put(store, path, "ns", "k", "v")
    with store.write() as t:
        kvconfig.delete(t, path, "ns", "k")
    with store.read() as t:
        assert kvconfig.get_namespace(t, "ns") == {}
    assert kvconfig.load_file(path) == {"ns": {}}


def test_null_value_creates_namespace_without_key(store: Store, tmp_path: Path) -> None:
    _put(store, str(tmp_path / "kv.json"), "ns", "k", None)
    with store.read() as t:
        assert kvconfig.get_namespace(t, "ns") == {} and kvconfig.get(t, "ns", "k") is None


def test_persist_and_reload_into_a_new_store(store: Store, tmp_path: Path) -> None:
    path = str(tmp_path / "sub" / "kv.json")
    _put(store, path, "ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    _put(store, path, "other", "x", 'quote " and / ü')
    fresh = Store.create(str(tmp_path / "lmdb2"), 16 << 20)
    try:
        assert kvconfig.load_into(fresh, path) == 2
        with fresh.read() as t:
            assert kvconfig.get(t, "other", "x") == 'quote " and / ü'
            assert kvconfig.get(t, "ORDER_TOPIC_CONFIG", "T") == "broker-a:4"
    finally:
        fresh.destroy()


def test_crash_before_rename_leaves_old_file_and_old_table(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "kv.json")
    _put(store, path, "ns", "k", "old")

    def crash(src: Any, dst: Any) -> None:
        raise OSError("simulated crash between write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        _put(store, path, "ns", "k", "new")
    monkeypatch.undo()
    assert kvconfig.load_file(path) == {"ns": {"k": "old"}}
    assert not Path(path + ".tmp").exists()  # a failed write removes its temporary file
    Path(path + ".tmp").write_text('{"configTable":{"ns":')  # a crash leaves one torn ...
    assert kvconfig.load_file(path) == {"ns": {"k": "old"}}  # ... which load ignores
    with store.read() as t:
        assert kvconfig.get(t, "ns", "k") == "old"
    _put(store, path, "ns", "k", "new")
    assert kvconfig.load_file(path) == {"ns": {"k": "new"}}


def test_load_missing_and_empty_files(tmp_path: Path) -> None:
    assert kvconfig.load_file(str(tmp_path / "missing.json")) == {}
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    assert kvconfig.load_file(str(empty)) == {}


@pytest.mark.parametrize("content", ['{"configTable":', '{"configTable":{"ns":{"k":1}}}',
                                     '{"configTable":[1]}', "[]"])
def test_corrupt_file_is_a_clear_error_and_is_not_wiped(tmp_path: Path, content: str) -> None:
    path = tmp_path / "kv.json"
    path.write_text(content)
    with pytest.raises(kvconfig.KVConfigError, match="kv.json"):
        kvconfig.load_file(str(path))
    assert path.read_text() == content


def test_file_is_java_compatible_text(store: Store, tmp_path: Path) -> None:
    path = str(tmp_path / "kv.json")
    _put(store, path, "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4;broker-b:4")
    assert Path(path).read_text() == \
        '{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4;broker-b:4"}}}'


def test_a_full_disk_fails_the_write_names_the_file_and_leaves_no_temporary_file(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "kv.json")
    _put(store, path, "ns", "k", "old")
    real_write = os.write

    def full(fd: int, data: Any) -> int:
        if len(data) > 20:
            real_write(fd, bytes(data[:20]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as failed:
        _put(store, path, "ns", "k", "x" * 100)
    monkeypatch.undo()
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == path
    assert not Path(path + ".tmp").exists()
    assert kvconfig.load_file(path) == {"ns": {"k": "old"}}
