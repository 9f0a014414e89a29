"""GET/UPDATE_NAMESRV_CONFIG on a real node: Java's answer, all=true, settings applied at once.

The key order Java 4.9.8 answers with is checked against the real Java NameServer in
tests/java_diff/test_namesrv_config.py; here it is the recorded list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.properties import parse_properties
from cluster.core.settings_schema import SETTINGS
from tests.integration.test_node import register, route
from tests.nodeproc import Conn, NodeProcess, poll_until
from tests.unit.test_state_nsconfig import JAVA_4_9_8_KEYS

pytestmark = pytest.mark.integration
TIMEOUT_S = 20.0


def get_config(conn: Conn, everything: bool = False) -> str:
    ext = {"all": "true"} if everything else None
    reply = conn.call(RemotingCommand(code=RequestCode.GET_NAMESRV_CONFIG, version=409,
                                      ext_fields=ext))
    assert reply.code == ResponseCode.SUCCESS and reply.body is not None
    return reply.body.decode("utf-8")


def update_config(conn: Conn, text: str) -> RemotingCommand:
    return conn.call(RemotingCommand(code=RequestCode.UPDATE_NAMESRV_CONFIG, version=409,
                                     body=text.encode("utf-8")))


def keys(text: str) -> list[str]:
    return [line.split("=", 1)[0] for line in text.splitlines()]


@pytest.fixture
def node_props() -> dict[str, str]:
    return {"ioWorkers": "1", "userKey": "kept"}


def test_default_answer_is_java_keys_in_java_order(node: NodeProcess) -> None:
    conn = Conn(node.addr, timeout=TIMEOUT_S)
    text = get_config(conn)
    assert sorted(keys(text)) == sorted([*JAVA_4_9_8_KEYS, "userKey"])
    assert [k for k in keys(text) if k != "userKey"] == JAVA_4_9_8_KEYS
    props = parse_properties(text)
    assert props["listenPort"] == str(node.port)
    assert props["kvConfigPath"] == str(node.data_dir / "kvConfig.json")
    assert props["configStorePath"] == str(node.config)
    assert (props["serverWorkerThreads"], props["serverSocketBacklog"]) == ("8", "1024")
    assert text.endswith("\n") and "\n\n" not in text


def test_all_true_adds_pynamesrv_settings_sorted(node: NodeProcess) -> None:
    conn = Conn(node.addr, timeout=TIMEOUT_S)
    every = keys(get_config(conn, everything=True))
    assert every == sorted(every)
    assert set(every) == {s.key for s in SETTINGS} | {"userKey"}


def test_java_keys_are_accepted_and_fixed_settings_refused(node: NodeProcess) -> None:
    conn = Conn(node.addr, timeout=TIMEOUT_S)
    assert update_config(conn, "serverWorkerThreads=16\nclusterTest=true\n").code == 0
    props = parse_properties(get_config(conn))
    assert (props["serverWorkerThreads"], props["clusterTest"]) == ("16", "true")
    refused = update_config(conn, "ioWorkers=2\n")
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert "ioWorkers cannot change while the node runs" in (refused.remark or "")
    persisted = parse_properties(node.config.read_text())
    assert (persisted["serverWorkerThreads"], persisted["ioWorkers"]) == ("16", "1")


def test_expiry_settings_updated_at_run_time_take_effect(tmp_path: Path) -> None:
    n = NodeProcess(tmp_path / "live", props={"scanNotActiveBrokerInterval": "3600000",
                                              "brokerChannelExpiredTime": "86400000"}).start()
    try:
        broker = Conn(n.addr, timeout=TIMEOUT_S)
        admin = Conn(n.addr, timeout=TIMEOUT_S)
        assert broker.call(register()).code == ResponseCode.SUCCESS
        assert admin.call(route("TopicTest")).code == ResponseCode.SUCCESS
        update = "brokerChannelExpiredTime=100\nscanNotActiveBrokerInterval=200\n"
        assert update_config(admin, update).code == ResponseCode.SUCCESS

        def expired() -> bool:
            return admin.call(route("TopicTest")).code == ResponseCode.TOPIC_NOT_EXIST

        poll_until(expired, timeout=TIMEOUT_S, interval=0.1,
                   what="the broker to expire under the updated settings")
    finally:
        n.stop()


def test_java_setting_updated_at_run_time_applies_at_the_next_start(tmp_path: Path) -> None:
    n = NodeProcess(tmp_path / "restart")
    port = n.port
    n.start()
    try:
        conn = Conn(n.addr, timeout=TIMEOUT_S)
        assert update_config(conn, "serverChannelMaxIdleTimeSeconds=1\n").code == 0
    finally:
        n.stop()
    again = NodeProcess(tmp_path / "restart", port=port).start()
    try:
        idle = Conn(again.addr, timeout=TIMEOUT_S)
        assert parse_properties(get_config(idle))["serverChannelMaxIdleTimeSeconds"] == "1"
        assert idle.is_closed_by_peer(timeout=TIMEOUT_S)
    finally:
        again.stop()
