"""Request processors through handle(): ports of the Java DefaultRequestProcessorTest."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.core.javaorder import string_hash
from cluster.core.protocol import body_common, register_body
from cluster.core.protocol.codes import FLAG_ONEWAY, FLAG_RESPONSE, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.dialect import Dialect
from cluster.core.protocol.lenient import loads_lenient
from state import nsconfig, queries
from state.store import Store
from worker.business import failures
from worker.business.acl.guard import AclGuard
from worker.business.context import NodeContext
from worker.business.processors import (
    HANDLERS,
    REFUSAL_CODES,
    UNIT_LISTS,
    handle,
    on_channel_destroy,
)
from worker.limits import PeerEvents

C = "DefaultCluster"
RC = ResponseCode


def make_ctx(store: Store, clock: Callable[[], int] = lambda: 1000, kv_path: str = "",
             config_path: str = "", props: dict[str, str] | None = None,
             dialect: Dialect = Dialect.V4_9_8) -> NodeContext:
    """A context following `dialect` (these tests port Java 4.9.8's processor tests)."""
    nsconfig.initialize(store, {"rocketmqVersion": dialect.value, **(props or {})},
                        config_path, kv_path)
    return NodeContext(store=store, node_name="n1", clock=clock, dialect=dialect)


def request(code: int, ext: dict[str, str] | None = None, body: bytes | None = None,
            version: int = 409, flag: int = 0) -> RemotingCommand:
    return RemotingCommand(code=code, opaque=7, flag=flag, version=version, ext_fields=ext,
                           body=body)


def register_request(name: str, addr: str, topics: dict[str, int], broker_id: int = 0,
                     dv: dict[str, int] | None = None, cluster: str = C, version: int = 409,
                     filters: list[str] | None = None, compressed: bool = False
                     ) -> RemotingCommand:
    configs = {t: register_body.topic_config(t, read_queue_nums=q, write_queue_nums=q)
               for t, q in topics.items()}
    body = register_body.encode_register_body(dv or {"counter": 1, "timestamp": 1}, configs,
                                              [] if filters is None else filters, compressed)
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
           "haServerAddr": addr + "0", "brokerId": str(broker_id),
           "compressed": "true" if compressed else "false",
           "bodyCrc32": str(body_common.crc32_java(body))}
    return request(103, ext, body, version)


def route_request(topic: str, version: int = 409) -> RemotingCommand:
    return request(105, {"topic": topic}, version=version)


def call(ctx: NodeContext, cmd: RemotingCommand, channel: str = "0.1.1") -> RemotingCommand:
    reply = handle(ctx, cmd, channel, "127.0.0.1:50000")
    assert reply is not None
    assert reply.opaque == cmd.opaque and reply.flag == FLAG_RESPONSE and reply.version == 409
    return reply


def body_json(reply: RemotingCommand) -> Any:
    assert reply.body is not None
    return loads_lenient(reply.body)


# ---------------------------------------------------------------- KV


def test_put_get_delete_kv(ctx: NodeContext, tmp_path: Path) -> None:
    ext = {"namespace": "namespace", "key": "key", "value": "value"}
    put = call(ctx, request(100, ext))
    assert (put.code, put.remark, put.ext_fields) == (0, None, None)
    got = call(ctx, request(101, {"namespace": "namespace", "key": "key"}))
    assert (got.code, got.ext_fields) == (0, {"value": "value"})
    assert (tmp_path / "kv.json").exists()
    assert call(ctx, request(102, {"namespace": "namespace", "key": "key"})).code == 0
    miss = call(ctx, request(101, {"namespace": "namespace", "key": "key"}))
    assert (miss.code, miss.ext_fields) == (RC.QUERY_NOT_FOUND, {})
    assert miss.remark == "No config item, Namespace: namespace Key: key"


def test_put_kv_without_key(ctx: NodeContext) -> None:
    reply = call(ctx, request(100, {"namespace": "ns"}))
    assert (reply.code, reply.remark) == (RC.SYSTEM_ERROR, "namespace or key is null")


def test_kv_list_by_namespace(ctx: NodeContext) -> None:
    missing = call(ctx, request(219, {"namespace": "ns"}))
    assert (missing.code, missing.remark) == (RC.QUERY_NOT_FOUND, "No config item, Namespace: ns")
    call(ctx, request(100, {"namespace": "ns", "key": "k", "value": "v"}))
    assert body_json(call(ctx, request(219, {"namespace": "ns"}))) == {"table": {"k": "v"}}


# ---------------------------------------------------------------- registration


def test_register_master_and_slave(ctx: NodeContext) -> None:
    master = call(ctx, register_request("b", "m:1", {"T": 4}))
    assert (master.code, master.ext_fields, master.body) == (0, {}, None)
    slave = call(ctx, register_request("b", "s:1", {"T": 4}, broker_id=1), "0.1.2")
    assert slave.ext_fields == {"haServerAddr": "m:10", "masterAddr": "m:1"}
    data = body_json(call(ctx, route_request("T")))
    assert data["brokerDatas"][0]["brokerAddrs"] == {"0": "m:1", "1": "s:1"}


def test_register_old_version_without_body(ctx: NodeContext) -> None:
    """testProcessRequest_RegisterBroker: default version 0, no body."""
    cmd = register_request("broker", "10.10.1.1", {}, broker_id=2333, version=0)
    cmd.body, cmd.ext_fields["bodyCrc32"] = None, "0"  # type: ignore[index]
    assert call(ctx, cmd).code == 0
    brokers = body_json(call(ctx, request(106)))["brokerAddrTable"]
    assert brokers["broker"]["brokerAddrs"] == {"2333": "10.10.1.1"}


def test_register_with_filter_server_and_compressed(ctx: NodeContext) -> None:
    call(ctx, register_request("b", "m:1", {"T": 4}, filters=["f:1"], version=100))
    assert body_json(call(ctx, route_request("T")))["filterServerTable"] == {"m:1": ["f:1"]}
    call(ctx, register_request("c", "c:1", {"Z": 2}, compressed=True), "0.1.2")
    assert body_json(call(ctx, route_request("Z")))["queueDatas"][0]["readQueueNums"] == 2


def test_register_crc_mismatch(ctx: NodeContext) -> None:
    cmd = register_request("b", "m:1", {"T": 4})
    cmd.ext_fields["bodyCrc32"] = "12345"  # type: ignore[index]
    reply = call(ctx, cmd)
    assert (reply.code, reply.remark) == (RC.SYSTEM_ERROR, "crc32 not match")


def test_register_reply_carries_order_kv_table_only_when_namespace_exists(
        ctx: NodeContext) -> None:
    assert call(ctx, register_request("b", "m:1", {"T": 4})).body is None
    call(ctx, request(100, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "b:4"}))
    reply = call(ctx, register_request("b", "m:1", {"T": 4}))
    assert body_json(reply) == {"table": {"T": "b:4"}}


def test_register_missing_header_is_system_error(ctx: NodeContext) -> None:
    cmd = register_request("b", "m:1", {"T": 4})
    del cmd.ext_fields["brokerId"]  # type: ignore[union-attr]
    reply = call(ctx, cmd)
    assert reply.code == RC.SYSTEM_ERROR and reply.remark.startswith("MissingField: ")  # type: ignore[union-attr]


def test_oneway_register_runs_without_reply(ctx: NodeContext) -> None:
    cmd = register_request("b", "m:1", {"T": 4})
    cmd.flag = FLAG_ONEWAY
    assert handle(ctx, cmd, "0.1.1", "") is None
    assert call(ctx, route_request("T")).code == 0


def test_responses_are_ignored(ctx: NodeContext) -> None:
    assert handle(ctx, request(105, {"topic": "T"}, flag=FLAG_RESPONSE), "0.1.1", "") is None


def test_unregister_keeps_other_brokers(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    call(ctx, register_request("b", "b:1", {"T": 4}), "0.1.2")
    ext = {"brokerName": "a", "brokerAddr": "a:1", "clusterName": C, "brokerId": "0"}
    assert call(ctx, request(104, ext)).ext_fields is None
    assert list(body_json(call(ctx, request(106)))["brokerAddrTable"]) == ["b"]


def test_query_data_version(ctx: NodeContext) -> None:
    dv = {"counter": 3, "timestamp": 9}
    call(ctx, register_request("a", "a:1", {"T": 4}, dv=dv))
    ext = {"brokerName": "a", "brokerAddr": "a:1", "clusterName": C, "brokerId": "0"}
    same = call(ctx, request(322, ext, orjson.dumps(dv)))
    assert same.ext_fields == {"changed": "false"} and body_json(same) == dv
    other = call(ctx, request(322, ext, b'{"counter":1,"timestamp":1}'))
    assert other.ext_fields == {"changed": "true"}
    no_body = call(ctx, request(322, ext))  # 4.9: NullPointerException
    assert (no_body.code, no_body.ext_fields) == (RC.SYSTEM_ERROR, None)
    no_addr = call(ctx, request(322, {"brokerName": "a"}, orjson.dumps(dv)))
    assert (no_addr.code, no_addr.ext_fields, no_addr.body) == (0, {"changed": "true"}, None)
    unknown = call(ctx, request(322, {**ext, "brokerAddr": "x:1"}, orjson.dumps(dv)))
    assert unknown.ext_fields == {"changed": "true"} and unknown.body is None


def test_heartbeat_and_expiry_with_fake_clock(store: Store) -> None:
    now = [0]
    ctx = make_ctx(store, clock=lambda: now[0])
    call(ctx, register_request("a", "a:1", {"T": 4}))
    now[0] = 100_000
    ext = {"clusterName": C, "brokerAddr": "a:1", "brokerName": "a"}
    assert call(ctx, request(904, ext)).code == 0
    from state.housekeeping import scan_not_active
    assert scan_not_active(store, 220_000, 120_000, False) == 0
    assert scan_not_active(store, 220_001, 120_000, False) == 1
    assert call(ctx, route_request("T")).code == RC.TOPIC_NOT_EXIST


def test_channel_destroy(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}), "0.5.1")
    on_channel_destroy(ctx, [("0.5.2", "127.0.0.1:1")])
    assert call(ctx, route_request("T")).code == 0
    on_channel_destroy(ctx, [("0.5.1", "127.0.0.1:2")])
    assert call(ctx, route_request("T")).code == RC.TOPIC_NOT_EXIST


# ---------------------------------------------------------------- routes


def test_route_not_found_and_json_flavours(ctx: NodeContext) -> None:
    miss = call(ctx, route_request("T"))
    assert miss.code == RC.TOPIC_NOT_EXIST and miss.body is None and miss.ext_fields is None
    assert miss.remark == ("No topic route info in name server for the topic: T\n"
                           "See http://rocketmq.apache.org/docs/faq/ for further details.")
    call(ctx, register_request("a", "a:1", {"T": 4}))
    assert b'{"0":"a:1"}' in call(ctx, route_request("T")).body  # type: ignore[operator]
    assert b'{0:"a:1"}' in call(ctx, route_request("T", version=399)).body  # type: ignore[operator]
    std = request(105, {"topic": "T", "acceptStandardJsonOnly": "true"}, version=399)
    assert b'{"0":"a:1"}' in call(ctx, std).body  # type: ignore[operator]


def test_route_order_topic_conf_follows_config(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    call(ctx, request(100, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "a:4"}))
    assert "orderTopicConf" not in body_json(call(ctx, route_request("T")))
    assert call(ctx, request(318, body=b"orderMessageEnable=true\n")).code == 0
    assert body_json(call(ctx, route_request("T")))["orderTopicConf"] == "a:4"
    call(ctx, request(100, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "a:2"}))
    assert body_json(call(ctx, route_request("T")))["orderTopicConf"] == "a:2"


def test_route_cache_sees_writes(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    assert body_json(call(ctx, route_request("T")))["queueDatas"][0]["perm"] == 6
    wipe = call(ctx, request(205, {"brokerName": "a"}))
    assert wipe.ext_fields == {"wipeTopicCount": "1"}
    assert body_json(call(ctx, route_request("T")))["queueDatas"][0]["perm"] == 4
    add = call(ctx, request(327, {"brokerName": "a"}))
    assert add.ext_fields == {"addTopicCount": "1"}
    assert body_json(call(ctx, route_request("T")))["queueDatas"][0]["perm"] == 6


def test_topic_lists(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4, "U": 4}))
    assert set(body_json(call(ctx, request(206)))["topicList"]) == {"T", "U"}
    assert set(body_json(call(ctx, request(224, {"cluster": C})))["topicList"]) == {"T", "U"}
    assert body_json(call(ctx, request(224, {"cluster": "x"}))) == {"topicList": []}
    system = body_json(call(ctx, request(304)))
    assert system == {"brokerAddr": "a:1", "topicList": system["topicList"]}
    assert set(system["topicList"]) == {"a", C}
    for code in (311, 312, 313):
        assert body_json(call(ctx, request(code))) == {"topicList": []}


def test_topic_list_switches(ctx: NodeContext) -> None:
    body = b"enableAllTopicList=false\nenableTopicList=false\n"
    assert call(ctx, request(318, body=body)).code == 0
    for cmd in (request(206), request(224, {"cluster": C}), request(311)):
        reply = call(ctx, cmd)
        assert (reply.code, reply.remark) == (RC.SYSTEM_ERROR, "disable")
    assert call(ctx, request(304)).code == 0


def test_delete_and_register_topic(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    assert call(ctx, request(216, {"topic": "T"})).code == 0
    assert call(ctx, route_request("T")).code == RC.TOPIC_NOT_EXIST
    qd = {"brokerName": "a", "perm": 6, "readQueueNums": 2, "writeQueueNums": 2,
          "topicSysFlag": 0}
    body = orjson.dumps({"brokerDatas": [], "queueDatas": [qd]})
    assert call(ctx, request(217, {"topic": "N"}, body)).code == 0
    assert body_json(call(ctx, route_request("N")))["queueDatas"] == [qd]


def test_broker_member_group(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    reply = call(ctx, request(901, {"clusterName": C, "brokerName": "a"}))
    assert reply.body == \
        b'{"brokerMemberGroup":{"brokerAddrs":{0:"a:1"},"brokerName":"a","cluster":"DefaultCluster"}}'


# ---------------------------------------------------------------- config, errors


def test_update_config_blacklist_and_unknown_key(ctx: NodeContext) -> None:
    assert call(ctx, request(318, body=b"enableTopicList=true")).code == 0
    for key in ("configStorePath", "kvConfigPath", "configBlackList"):
        reply = call(ctx, request(318, body=f"{key}=/tmp/x".encode()))
        assert (reply.code, reply.remark) == (RC.NO_PERMISSION,
                                              "Can not update config in black list.")
    assert call(ctx, request(318, body=b"{key=value}")).code == 0
    assert call(ctx, request(318)).code == 0


def test_update_config_refuses_line_breaks(ctx: NodeContext) -> None:
    reply = call(ctx, request(318, body=b"nodeName=a\\nb"))
    assert reply.code == RC.SYSTEM_ERROR and "line break" in (reply.remark or "")


def test_config_refusals_and_unit_lists_map_to_the_wire(ctx: NodeContext) -> None:
    assert set(REFUSAL_CODES) == set(nsconfig.Refusal)
    reply = call(ctx, request(318, body=b"ioWorkers=2"))
    assert reply.code == RC.SYSTEM_ERROR
    assert "ioWorkers cannot change while the node runs" in (reply.remark or "")
    reply = call(ctx, request(318, body=b"brokerChannelExpiredTime=1"))
    assert reply.code == RC.SYSTEM_ERROR
    assert "bad value for brokerChannelExpiredTime" in (reply.remark or "")
    assert set(UNIT_LISTS) == {311, 312, 313} and set(UNIT_LISTS.values()) == set(queries.UnitList)


def test_get_config(ctx: NodeContext) -> None:
    reply = call(ctx, request(319))
    assert reply.code == 0 and b"orderMessageEnable=false\n" in reply.body  # type: ignore[operator]


def test_unsupported_code(ctx: NodeContext) -> None:
    reply = call(ctx, request(9999))
    assert (reply.code, reply.remark) == (RC.REQUEST_CODE_NOT_SUPPORTED,
                                          " request type 9999 not supported")


def test_handler_exception_is_system_error(ctx: NodeContext) -> None:
    reply = call(ctx, request(322, {"brokerAddr": "a:1"}, b"{not json"))
    assert reply.code == RC.SYSTEM_ERROR and reply.remark.startswith("ValueError: ")  # type: ignore[union-attr]


def test_a_write_failing_on_a_full_disk_is_answered_and_logged_once(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    ctx = make_ctx(store, kv_path=str(tmp_path / "kv.json"))
    monkeypatch.setattr(failures, "WRITE_FAILURES", PeerEvents(
        "write_failed", "error", logging.getLogger("pynamesrv.business"), who="file"))

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    caplog.set_level(logging.WARNING, "pynamesrv.business")
    for _ in range(5):
        reply = call(ctx, request(100, {"namespace": "ns", "key": "k", "value": "v"}))
        assert reply.code == RC.SYSTEM_ERROR
        remark = reply.remark or ""
        assert "No space left on device" in remark and "kv.json" in remark
    monkeypatch.undo()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "event=write_failed error=ENOSPC file=" in lines[0], lines
    assert not (tmp_path / "kv.json.tmp").exists()
    assert call(ctx, request(101, {"namespace": "ns", "key": "k"})).code == RC.QUERY_NOT_FOUND


def test_snapshot(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    first = body_json(call(ctx, request(60001)))
    second = body_json(call(ctx, request(60001)))
    assert (first["node"], first["takenAt"], second["seq"]) == ("n1", 1000, first["seq"] + 1)
    tables = first["tables"]
    assert tables["broker"] == {"a": {"cluster": C, "brokerAddrs": {"0": "a:1"}}}
    assert tables["topic"]["T"] == {"a": {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0,
                                          "writeQueueNums": 4}}
    assert tables["live"] == {"a:1": {"dataVersion": {"counter": 1, "timestamp": 1},
                                      "haServerAddr": "a:10"}}


def test_every_reference_code_has_a_handler() -> None:
    codes = {100, 101, 102, 103, 104, 105, 106, 205, 206, 216, 217, 219, 224, 304, 311, 312,
             313, 318, 319, 322, 327, 901, 904, 60001, 60002}
    assert codes == set(HANDLERS)


def test_connections_closed_together_are_cleaned_in_one_write(ctx: NodeContext) -> None:
    for i in range(3):
        assert call(ctx, register_request(f"b{i}", f"127.0.0.1:{10911 + i}", {"T": 4}),
                    channel=f"0.9.{i}").code == RC.SUCCESS
    generation = ctx.store.generation_token()
    on_channel_destroy(ctx, [("0.9.0", ""), ("0.9.2", ""), ("0.9.7", "")])
    data = body_json(call(ctx, route_request("T")))
    assert [b["brokerName"] for b in data["brokerDatas"]] == ["b1"]
    assert ctx.store.generation_token() == str(int(generation or b"0") + 1).encode()


def test_whole_table_replies_are_kept_until_the_tables_change(ctx: NodeContext) -> None:
    call(ctx, register_request("b", "m:1", {"T": 4}))
    call(ctx, request(100, {"namespace": "ns", "key": "k", "value": "v"}))
    asks = [request(206), request(224, {"cluster": C}), request(219, {"namespace": "ns"}),
            request(106)]
    first = [call(ctx, cmd).body for cmd in asks]
    assert [call(ctx, cmd).body for cmd in asks] == first
    assert all(b is not None for b in first) and len(ctx.route_cache.bodies) >= 4
    call(ctx, register_request("c", "c:1", {"U": 4}), "0.1.2")
    call(ctx, request(100, {"namespace": "ns", "key": "k2", "value": "v2"}))
    assert set(body_json(call(ctx, asks[0]))["topicList"]) == {"T", "U"}
    assert set(body_json(call(ctx, asks[1]))["topicList"]) == {"T", "U"}
    assert body_json(call(ctx, asks[2])) == {"table": {"k": "v", "k2": "v2"}}
    assert set(body_json(call(ctx, asks[3]))["brokerAddrTable"]) == {"b", "c"}


def test_java_string_hashes() -> None:
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == -(2**31)
    assert string_hash("") == 0
    assert string_hash("\u00e9\u20ac") == 0xE9 * 31 + 0x20AC
    assert string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # two UTF-16 code units


def test_with_acl_a_closed_connection_removes_only_what_it_registered(
        ctx: NodeContext, tmp_path: Path) -> None:
    """The peer-address fallback (a connection from a broker's own address that registered
    nothing) needs what a registration needs: with ACL on, a global white list entry."""
    call(ctx, register_request("a", "10.0.0.7:10911", {"T": 4}), "0.5.1")
    accounts = tmp_path / "plain_acl.yml"
    accounts.write_text("accounts:\n  - {accessKey: brokerKey1, secretKey: brokerSecret1}\n")
    ctx.acl = AclGuard(accounts)
    on_channel_destroy(ctx, [("0.5.9@10.0.0.7:10911", "10.0.0.7:10911")])
    ctx.acl = None
    assert call(ctx, route_request("T")).code == RC.SUCCESS  # still there
    accounts.write_text("globalWhiteRemoteAddresses: [10.0.0.*]\n")
    ctx.acl = AclGuard(accounts)
    on_channel_destroy(ctx, [("0.5.9@10.0.0.7:10911", "10.0.0.7:10911")])
    ctx.acl = None
    assert call(ctx, route_request("T")).code == RC.TOPIC_NOT_EXIST
