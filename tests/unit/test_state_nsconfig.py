"""Runtime namesrv config: blacklist, line breaks, known keys, persisted file, Java's answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.core.protocol.properties import parse_properties
from cluster.core.settings_schema import SETTINGS, Kind, Setting, Update
from state import nsconfig
from state.nsconfig import Refusal, Refused
from state.store import Store

# GET_NAMESRV_CONFIG of the Java 5.5.0 NameServer (its NamesrvConfig and NettyServerConfig).
JAVA_5_5_0_KEYS = sorted([
    "bindAddress", "clientRequestThreadPoolNums", "clientRequestThreadPoolQueueCapacity",
    "clusterTest", "configBlackList", "configStorePath", "defaultThreadPoolNums",
    "defaultThreadPoolQueueCapacity", "deleteTopicWithBrokerRegistration",
    "enableAllTopicList", "enableControllerInNamesrv", "enableShutdownGracefully",
    "enableTopicList", "kvConfigPath", "listenPort", "needWaitForService",
    "notifyMinBrokerIdChanged", "orderMessageEnable", "productEnvName",
    "returnOrderTopicConfigToBroker", "rocketmqHome", "scanNotActiveBrokerInterval",
    "serverAsyncSemaphoreValue", "serverCallbackExecutorThreads",
    "serverChannelMaxIdleTimeSeconds", "serverNettyWorkerGroupEnable",
    "serverOnewaySemaphoreValue", "serverPooledByteBufAllocatorEnable",
    "serverSelectorThreads", "serverSocketBacklog", "serverSocketRcvBufSize",
    "serverSocketSndBufSize", "serverWorkerThreads", "shutdownWaitTimeSeconds",
    "supportActingMaster", "unRegisterBrokerQueueCapacity", "useEpollNativeSelector",
    "waitSecondsForService", "writeBufferHighWaterMark", "writeBufferLowWaterMark",
])
# GET_NAMESRV_CONFIG of a real NameServer 4.9.8 on Java 17 started with `-c` (key order).
JAVA_4_9_8_KEYS = [
    "serverSocketBacklog", "writeBufferHighWaterMark", "serverWorkerThreads",
    "serverSelectorThreads", "serverChannelMaxIdleTimeSeconds", "configBlackList",
    "writeBufferLowWaterMark", "serverSocketRcvBufSize", "serverAsyncSemaphoreValue",
    "kvConfigPath", "configStorePath", "clusterTest", "orderMessageEnable",
    "serverSocketSndBufSize", "serverOnewaySemaphoreValue", "serverCallbackExecutorThreads",
    "listenPort", "rocketmqHome", "productEnvName", "useEpollNativeSelector",
    "serverPooledByteBufAllocatorEnable",
]


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 16 << 20)
    nsconfig.initialize(s, {"extraFileKey": "x", "rocketmqHome": "/opt/rmq"},
                        str(tmp_path / "namesrv.properties"),
                        str(tmp_path / "kv.json"))
    yield s
    s.destroy()


def _update(store: Store, props: dict[str, str]) -> Refused | None:
    with store.write() as t:
        return nsconfig.update(t, props)


def test_defaults_and_typed_getters(store: Store) -> None:
    with store.read() as t:
        assert nsconfig.get_bool(t, "orderMessageEnable") is False
        assert nsconfig.get_bool(t, "enableTopicList") is True
        assert nsconfig.get_int(t, "brokerChannelExpiredTime") == 120_000


def test_update_known_key_persists_sorted_file(store: Store, tmp_path: Path) -> None:
    assert _update(store, {"orderMessageEnable": "TRUE", "enableTopicList": " false"}) is None
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
    refused = _update(store, {key: "/tmp/evil", "orderMessageEnable": "true"})
    assert refused == Refused(Refusal.BLACK_LIST, "Can not update config in black list.")
    with store.read() as t:
        assert nsconfig.get_bool(t, "orderMessageEnable") is False
    assert not (tmp_path / "namesrv.properties").exists()


def test_configured_blacklist_is_honoured(tmp_path: Path) -> None:
    s = Store.create(str(tmp_path / "l2"), 16 << 20)
    try:
        nsconfig.initialize(s, {"configBlackList": "enableTopicList"}, "", "")
        with s.write() as t:
            for props in ({"enableTopicList": "false"}, {"kvConfigPath": "x"}):
                refused = nsconfig.update(t, props)
                assert refused is not None and refused.reason is Refusal.BLACK_LIST
    finally:
        s.destroy()


@pytest.mark.parametrize("props", [{"productEnvName": "a\nrm -rf /"},
                                   {"productEnvName": "a\rb"}, {"a\nb": "c"}])
def test_line_breaks_are_refused(store: Store, props: dict[str, str]) -> None:
    refused = _update(store, props)
    assert refused is not None and refused.reason is Refusal.LINE_BREAK
    assert "line break" in refused.message
    with store.read() as t:
        assert nsconfig.get(t, "productEnvName") == "center"


def test_unknown_keys_are_ignored(store: Store) -> None:
    assert _update(store, {"key": "value"}) is None
    with store.read() as t:
        assert nsconfig.get(t, "key") is None


@pytest.mark.parametrize("value", ["50", "86400001", "1e3", ""])
def test_bad_int_value_is_refused(store: Store, tmp_path: Path, value: str) -> None:
    refused = _update(store, {"brokerChannelExpiredTime": value})
    assert refused is not None and refused.reason is Refusal.INVALID_VALUE
    assert refused.message.startswith(
        "Can not update config: bad value for brokerChannelExpiredTime: ")
    with store.read() as t:
        assert nsconfig.get_int(t, "brokerChannelExpiredTime") == 120_000
    assert not (tmp_path / "namesrv.properties").exists()


REFUSED = [s for s in SETTINGS if s.update is Update.REFUSED]
ACCEPTED = [s for s in SETTINGS if s.update in (Update.LIVE, Update.RESTART, Update.IGNORED)]


@pytest.mark.parametrize("setting", REFUSED, ids=lambda s: s.key)
def test_settings_fixed_at_start_are_refused(store: Store, tmp_path: Path,
                                             setting: Setting) -> None:
    value = str(setting.lo) if setting.kind is Kind.INT else "x"
    refused = _update(store, {setting.key: value, "orderMessageEnable": "true"})
    assert refused == Refused(
        Refusal.NOT_UPDATABLE,
        f"Can not update config: {setting.key} cannot change while the node runs; "
        "set it in the node's config file and restart.")
    with store.read() as t:
        assert nsconfig.get_bool(t, "orderMessageEnable") is False
    assert not (tmp_path / "namesrv.properties").exists()


@pytest.mark.parametrize("setting", ACCEPTED, ids=lambda s: s.key)
def test_updatable_settings_are_stored_and_persisted(store: Store, tmp_path: Path,
                                                     setting: Setting) -> None:
    value = {Kind.INT: str(setting.hi), Kind.BOOL: " TRUE", Kind.STR: " x "}[setting.kind]
    stored = value.strip().lower()
    assert _update(store, {setting.key: value}) is None
    with store.read() as t:
        assert nsconfig.get(t, setting.key) == stored
        assert f"{setting.key}={stored}\n" in nsconfig.properties_text(t, everything=True)
    assert parse_properties((tmp_path / "namesrv.properties").read_text())[setting.key] == stored


def _keys(text: str) -> list[str]:
    return [line.split("=", 1)[0] for line in text.splitlines()]


def test_default_answer_is_java_4_9_8_keys_in_java_order(tmp_path: Path) -> None:
    s = Store.create(str(tmp_path / "l3"), 16 << 20)
    try:
        nsconfig.initialize(s, {"ioWorkers": "3", "nodeName": "n", "rocketmqHome": "/opt/rmq",
                                "rocketmqVersion": "4.9.8"}, "/p/ns.properties", "/p/kv")
        with s.read() as t:
            text = nsconfig.properties_text(t)
    finally:
        s.destroy()
    assert _keys(text) == JAVA_4_9_8_KEYS
    assert nsconfig.java_order([]) == JAVA_4_9_8_KEYS
    lines = text.splitlines()
    assert {"serverSocketBacklog=1024", "serverPooledByteBufAllocatorEnable=true",
            "clusterTest=false", "productEnvName=center", "kvConfigPath=/p/kv",
            "configStorePath=/p/ns.properties"} <= set(lines)


def test_unknown_file_keys_join_the_default_answer(store: Store) -> None:
    with store.write() as t:
        t.put("config", "rocketmqVersion", "4.9.8")
    with store.read() as t:
        keys = _keys(nsconfig.properties_text(t))
    assert sorted(keys) == sorted([*JAVA_4_9_8_KEYS, "extraFileKey"])
    assert [k for k in keys if k != "extraFileKey"] == JAVA_4_9_8_KEYS


def test_five_answers_java_5_keys_and_unknown_file_keys_sorted(store: Store) -> None:
    """What the Java 5.5.0 NameServer answers: its 40 config fields and the file's other
    keys, sorted (Configuration prints a TreeMap); pynamesrv's own keys only with all=true."""
    with store.read() as t:
        text = nsconfig.properties_text(t)
        everything = _keys(nsconfig.properties_text(t, everything=True))
    keys = _keys(text)
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    assert set(keys) == {*JAVA_5_5_0_KEYS, "extraFileKey"}
    assert {"ioWorkers", "rocketmqVersion", "brokerChannelExpiredTime"} <= set(everything)
    assert "ioWorkers" not in keys and "bindAddress=127.0.0.1" in text.splitlines()
    assert {"enableShutdownGracefully=false", "shutdownWaitTimeSeconds=30",
            "waitSecondsForService=45", "unRegisterBrokerQueueCapacity=3000",
            "supportActingMaster=false", "serverNettyWorkerGroupEnable=true"} <= set(
                text.splitlines())


def test_java_order_holds_every_key_once_through_growth() -> None:
    extra = [f"userKey{i}" for i in range(40)]
    order = nsconfig.java_order(["listenPort", "ioWorkers", *extra])
    assert sorted(order) == sorted(JAVA_4_9_8_KEYS + extra)


def test_all_answer_is_every_key_sorted(store: Store) -> None:
    with store.read() as t:
        keys = _keys(nsconfig.properties_text(t, everything=True))
    assert keys == sorted(keys)
    defaults = {s.key for s in SETTINGS if s.default is not None}
    assert set(keys) == defaults | {"configStorePath", "rocketmqHome", "extraFileKey"}


def test_backslash_values_round_trip_through_the_file(store: Store, tmp_path: Path) -> None:
    assert _update(store, {"extraFileKey": r" C:\dir"}) is None
    props = parse_properties((tmp_path / "namesrv.properties").read_text())
    assert props["extraFileKey"] == r"C:\dir"


def test_a_value_over_the_bound_is_refused_and_nothing_is_persisted(store: Store,
                                                                    tmp_path: Path) -> None:
    refused = _update(store, {"productEnvName": "A" * (nsconfig.VALUE_MAX_CHARS + 1),
                              "orderMessageEnable": "true"})
    assert refused is not None and refused.reason is Refusal.TOO_LARGE
    assert refused.message == ("Can not update config: the value of 'productEnvName' has "
                               f"{nsconfig.VALUE_MAX_CHARS + 1} characters, at most "
                               f"{nsconfig.VALUE_MAX_CHARS}.")
    with store.read() as t:
        assert nsconfig.get(t, "productEnvName") == "center"
        assert nsconfig.get_bool(t, "orderMessageEnable") is False
    assert not (tmp_path / "namesrv.properties").exists()
    assert _update(store, {"productEnvName": "A" * nsconfig.VALUE_MAX_CHARS}) is None


def test_an_update_growing_the_config_past_its_bound_is_refused(tmp_path: Path) -> None:
    s = Store.create(str(tmp_path / "lmdb"), 16 << 20)
    file_keys = {f"extra{i}": "x" for i in range(30)}  # unknown file keys are updatable
    nsconfig.initialize(s, file_keys, str(tmp_path / "p"), str(tmp_path / "kv.json"))
    try:
        big = {k: "B" * nsconfig.VALUE_MAX_CHARS for k in list(file_keys)[:15]}
        assert _update(s, big) is None  # about 61 KiB
        refused = _update(s, {"extra20": "C" * nsconfig.VALUE_MAX_CHARS})
        assert refused is not None and refused.reason is Refusal.TOO_LARGE
        assert refused.message.endswith(f"bytes, at most {nsconfig.CONFIG_MAX_BYTES}.")
        with s.read() as t:
            assert nsconfig.get(t, "extra20") == "x"
    finally:
        s.destroy()


def test_an_oversized_config_from_an_older_version_loads_and_can_shrink(tmp_path: Path) -> None:
    huge = "A" * (2 << 20)
    assert "productEnvName" in (nsconfig.oversized({"productEnvName": huge}) or "")
    assert nsconfig.oversized({"productEnvName": "center"}) is None
    s = Store.create(str(tmp_path / "lmdb"), 64 << 20)
    nsconfig.initialize(s, {"productEnvName": huge}, str(tmp_path / "p"),
                        str(tmp_path / "kv.json"))
    try:
        with s.read() as t:
            assert nsconfig.get(t, "productEnvName") == huge
        assert _update(s, {"orderMessageEnable": "true"}) is None  # does not grow it
        assert _update(s, {"productEnvName": "center"}) is None
        with s.read() as t:
            assert nsconfig.config_bytes(nsconfig.all_properties(t)) < nsconfig.CONFIG_MAX_BYTES
    finally:
        s.destroy()
