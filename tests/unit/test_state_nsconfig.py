"""Runtime namesrv config: blacklist, line breaks, known keys, persisted file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.protocol.codes import ResponseCode
from cluster.protocol.properties import parse_properties
from state import nsconfig
from state.store import Store


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 16 << 20)
    nsconfig.initialize(s, {"extraFileKey": "x"}, str(tmp_path / "namesrv.properties"),
                        str(tmp_path / "kv.json"))
    yield s
    s.destroy()


def _update(store: Store, props: dict[str, str]) -> tuple[int, str | None]:
    with store.write() as t:
        return nsconfig.update(t, props)


def test_defaults_and_typed_getters(store: Store) -> None:
    with store.read() as t:
        assert nsconfig.get_bool(t, "orderMessageEnable") is False
        assert nsconfig.get_bool(t, "enableTopicList") is True
        assert nsconfig.get_int(t, "brokerChannelExpiredTime") == 120_000


def test_update_known_key_persists_sorted_file(store: Store, tmp_path: Path) -> None:
    assert _update(store, {"orderMessageEnable": "TRUE", "enableTopicList": " false"}) == (0, None)
    with store.read() as t:
        assert nsconfig.get_bool(t, "orderMessageEnable") is True
        assert nsconfig.get_bool(t, "enableTopicList") is False
    text = (tmp_path / "namesrv.properties").read_text()
    keys = [line.split("=", 1)[0] for line in text.splitlines()]
    assert keys == sorted(keys)
    props = parse_properties(text)
    assert props["orderMessageEnable"] == "true" and props["extraFileKey"] == "x"


@pytest.mark.parametrize("key", ["configStorePath", "kvConfigPath", "configBlackList",
                                 "rocketmqHome"])
def test_blacklisted_keys_are_refused(store: Store, tmp_path: Path, key: str) -> None:
    code, remark = _update(store, {key: "/tmp/evil", "orderMessageEnable": "true"})
    assert (code, remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    with store.read() as t:
        assert nsconfig.get_bool(t, "orderMessageEnable") is False
    assert not (tmp_path / "namesrv.properties").exists()


def test_configured_blacklist_is_honoured(tmp_path: Path) -> None:
    s = Store.create(str(tmp_path / "l2"), 16 << 20)
    try:
        nsconfig.initialize(s, {"configBlackList": "enableTopicList"}, "", "")
        with s.write() as t:
            assert nsconfig.update(t, {"enableTopicList": "false"})[0] == ResponseCode.NO_PERMISSION
            assert nsconfig.update(t, {"kvConfigPath": "x"})[0] == ResponseCode.NO_PERMISSION
    finally:
        s.destroy()


@pytest.mark.parametrize("props", [{"nodeName": "a\nrm -rf /"}, {"nodeName": "a\rb"},
                                   {"a\nb": "c"}])
def test_line_breaks_are_refused(store: Store, props: dict[str, str]) -> None:
    code, remark = _update(store, props)
    assert code == ResponseCode.SYSTEM_ERROR and remark and "line break" in remark
    with store.read() as t:
        assert nsconfig.get(t, "nodeName") == ""


def test_unknown_keys_are_ignored(store: Store) -> None:
    assert _update(store, {"key": "value"}) == (0, None)
    with store.read() as t:
        assert nsconfig.get(t, "key") is None


def test_bad_int_value_is_refused(store: Store) -> None:
    code, remark = _update(store, {"ioWorkers": "0"})
    assert code == ResponseCode.SYSTEM_ERROR and "ioWorkers" in (remark or "")


def test_properties_text_is_sorted(store: Store) -> None:
    with store.read() as t:
        text = nsconfig.properties_text(t)
    lines = text.splitlines()
    assert lines == sorted(lines) and "orderMessageEnable=false" in lines


def test_backslash_values_round_trip_through_the_file(store: Store, tmp_path: Path) -> None:
    assert _update(store, {"extraFileKey": r" C:\dir"}) == (0, None)
    props = parse_properties((tmp_path / "namesrv.properties").read_text())
    assert props["extraFileKey"] == r"C:\dir"
