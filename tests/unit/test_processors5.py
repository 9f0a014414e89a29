"""Request processors of a node following 5.x (`worker.business.processors5`,
`worker.business.route_lookup`), through handle(), with a fake clock."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.core.protocol import register_body
from cluster.core.protocol.codes import V5_3_1, V5_5_0, ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.dialect import Dialect
from cluster.core.protocol.frame import FrameError, decode_command, encode_command
from cluster.core.protocol.lenient import loads_lenient
from state import nsconfig, queries
from state.store import Store
from tests.unit.test_processors import make_ctx, register_request, request, route_request
from worker.business.context import NodeContext
from worker.business.processors import handle
from worker.io import process as io_process
from worker.io.go_away import go_away_reply

RC = ResponseCode


@pytest.fixture()
def now() -> list[int]:
    return [1_000_000]


@pytest.fixture()
def ctx5(store: Store, tmp_path: Path, now: list[int]) -> NodeContext:
    return make_ctx(store, clock=lambda: now[0], kv_path=str(tmp_path / "kv.json"),
                    config_path=str(tmp_path / "ns.properties"), dialect=Dialect.V5_5_0)


def call(ctx: NodeContext, cmd: RemotingCommand, channel: str = "0.1.1") -> RemotingCommand:
    reply = handle(ctx, cmd, channel, "127.0.0.1:50000")
    assert reply is not None and reply.version == V5_5_0
    assert reply.serialize_type is SerializeType.JSON  # 5.x answers in JSON, always
    return reply


def five(cmd: RemotingCommand, **extra: str) -> RemotingCommand:
    assert cmd.ext_fields is not None
    cmd.ext_fields.update({"enableActingMaster": "true", **extra})
    return cmd


def route(ctx: NodeContext, topic: str, **ext: str) -> Any:
    cmd = route_request(topic)
    assert cmd.ext_fields is not None
    cmd.ext_fields.update(ext)
    reply = call(ctx, cmd)
    return reply if reply.code != RC.SUCCESS else loads_lenient(reply.body or b"")


def test_replies_carry_5_5_0_and_json_whatever_the_request(ctx5: NodeContext) -> None:
    cmd = request(106)
    cmd.serialize_type = SerializeType.ROCKETMQ
    assert call(ctx5, cmd).code == RC.SUCCESS
    missing = call(ctx5, route_request("nope"))
    assert missing.code == RC.TOPIC_NOT_EXIST
    assert "https://rocketmq.apache.org/docs/bestPractice/06FAQ" in (missing.remark or "")


def test_one_topic_first_is_register_broker_failed(ctx5: NodeContext) -> None:
    reply = call(ctx5, five(register_request("b", "10.0.0.1:10911", {"T": 4})))
    assert (reply.code, reply.remark, reply.ext_fields) == (RC.SYSTEM_ERROR,
                                                            "register broker failed", {})
    body = loads_lenient(call(ctx5, request(106)).body or b"")
    assert body["brokerAddrTable"]["b"]["brokerAddrs"] == {}


def test_broker_data_carries_acting_master_and_zone(ctx5: NodeContext) -> None:
    reg = five(register_request("b", "10.0.0.1:10911", {"T": 4, "U": 4}), __ZONE_NAME="z1")
    assert call(ctx5, reg).code == RC.SUCCESS
    bd = route(ctx5, "T")["brokerDatas"][0]
    assert bd["enableActingMaster"] is True and bd["zoneName"] == "z1"
    assert route(ctx5, "T", __ZONE_MODE="true", __ZONE_NAME="Z1")["brokerDatas"] == [bd]
    assert route(ctx5, "T", __ZONE_MODE="true", __ZONE_NAME="z2")["brokerDatas"] == []
    old = register_request("o", "10.0.0.2:10911", {"T": 4, "V": 4})  # a 4.9 broker
    call(ctx5, old)
    assert route(ctx5, "V")["brokerDatas"][0]["enableActingMaster"] is False


def test_acting_master_needs_support_acting_master(ctx5: NodeContext) -> None:
    call(ctx5, five(register_request("b", "10.0.0.1:10911", {"T": 4, "U": 4})))
    call(ctx5, five(register_request("b", "10.0.0.2:10911", {"T": 4, "U": 4}, broker_id=1)))
    call(ctx5, request(104, {"clusterName": "DefaultCluster", "brokerAddr": "10.0.0.1:10911",
                             "brokerName": "b", "brokerId": "0"}))
    assert route(ctx5, "T")["brokerDatas"][0]["brokerAddrs"] == {"1": "10.0.0.2:10911"}
    call(ctx5, request(318, body=b"supportActingMaster=true"))
    shown = route(ctx5, "T")
    assert shown["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.2:10911"}
    assert shown["queueDatas"][0]["perm"] == 4


def test_member_group_keeps_the_unset_remark(ctx5: NodeContext) -> None:
    reply = call(ctx5, request(901, {"brokerName": "x"}))
    assert (reply.code, reply.remark) == (RC.SUCCESS, "not set any response code")
    assert reply.body == b'{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"x"}}'


def test_heartbeat_and_data_version_need_cluster_and_address(ctx5: NodeContext) -> None:
    for code in (904, 322):
        assert call(ctx5, request(code, {"brokerAddr": "a:1"}, b"{}")).code == RC.SYSTEM_ERROR
    reply = call(ctx5, request(322, {"clusterName": "C", "brokerAddr": "a:1"}))
    assert (reply.code, reply.ext_fields, reply.body) == (RC.SUCCESS, {"changed": "true"}, None)
    assert call(ctx5, request(104)).code == RC.SUCCESS  # 5.x queues it, then fails quietly
    assert call(ctx5, request(217)).code == RC.SUCCESS


def test_data_version_replies_carry_the_state_version(ctx5: NodeContext) -> None:
    call(ctx5, register_request("b", "10.0.0.1:10911", {"T": 4, "U": 4}))
    dv = orjson.dumps({"counter": 1, "timestamp": 1})
    reply = call(ctx5, request(322, {"clusterName": "DefaultCluster",
                                     "brokerAddr": "10.0.0.1:10911"}, dv))
    assert reply.ext_fields == {"changed": "false"}
    assert reply.body == b'{"counter":1,"stateVersion":0,"timestamp":1}'


def test_not_ready_window(ctx5: NodeContext, now: list[int]) -> None:
    call(ctx5, register_request("b", "10.0.0.1:10911", {"T": 4, "U": 4}))
    ctx5.started_at = now[0]
    assert route(ctx5, "T")["brokerDatas"]  # needWaitForService is off
    call(ctx5, request(318, body=b"needWaitForService=true\nwaitSecondsForService=45"))
    reply = route(ctx5, "T")
    assert (reply.code, reply.remark) == (RC.SYSTEM_ERROR, "name server not ready")
    now[0] += 44_999
    assert route(ctx5, "nope").code == RC.SYSTEM_ERROR
    now[0] += 1
    assert route(ctx5, "T")["brokerDatas"]


def test_static_topic_mappings_in_both_json_flavours(ctx5: NodeContext) -> None:
    info = {"bname": "b", "currIdMap": {"0": 0, "10": 1}, "dirty": False, "epoch": 7,
            "scope": "__global__", "topic": "S", "totalQueues": 2, "ignored": 1}
    configs = {t: register_body.topic_config(t) for t in ("S", "T")}
    body = register_body.encode_register_body({"counter": 1, "timestamp": 1}, configs, [],
                                              False, mappings={"S": info})
    cmd = register_request("b", "10.0.0.1:10911", {"S": 4, "T": 4})
    cmd.body = body
    assert cmd.ext_fields is not None
    cmd.ext_fields["bodyCrc32"] = "0"
    assert call(ctx5, cmd).code == RC.SUCCESS
    standard = call(ctx5, route_request("S")).body or b""
    plain = call(ctx5, route_request("S", version=0)).body or b""
    assert b'"currIdMap":{"0":0,"10":1}' in standard and b'"currIdMap":{0:0,10:1}' in plain
    assert b'"topicQueueMappingByBroker":{"b":{"bname":"b",' in standard
    assert b"ignored" not in standard
    assert b"topicQueueMapping" not in (call(ctx5, route_request("T")).body or b"")


def test_topics_of_equal_queue_datas_share_one_cached_route_body(ctx5: NodeContext) -> None:
    assert call(ctx5, five(register_request("b", "10.0.0.1:10911",
                                            {"T": 4, "U": 4, "V": 8}))).code == RC.SUCCESS
    t, u, v = (call(ctx5, route_request(topic)).body for topic in "TUV")
    assert t == u != v
    assert len(ctx5.route_cache.bodies) == 2


def test_go_away_answers_only_clients_newer_than_5_3_1() -> None:
    new = RemotingCommand(code=105, opaque=9, version=V5_3_1 + 1, ext_fields={"topic": "T"})
    old = RemotingCommand(code=105, opaque=9, version=V5_3_1, ext_fields={"topic": "T"})
    reply = go_away_reply(encode_command(new)[4:], Dialect.V5_5_0)
    assert reply is not None
    back = decode_command(reply[4:])
    assert (back.code, back.remark, back.opaque, back.version) == (1500, "please go away", 9,
                                                                   V5_5_0)
    assert go_away_reply(encode_command(old)[4:], Dialect.V5_5_0) is None
    new.flag = 2  # oneway: not run, no reply
    assert go_away_reply(encode_command(new)[4:], Dialect.V5_5_0) == b""


@pytest.mark.parametrize("header, fields", [
    (b"{/*c*/'code':106.7,'opaque':+7,'flag':0,}", (106, 7, 0)),
    (b'{"code":0106,"opaque":7,"flag":true} // a comment', (106, 7, 1)),
])
def test_fastjson2_headers(header: bytes, fields: tuple[int, int, int]) -> None:
    frame = struct.pack(">I", len(header)) + header
    cmd = decode_command(frame, fastjson2=True)
    assert (cmd.code, cmd.opaque, cmd.flag) == fields


@pytest.mark.parametrize("header", [b"{code:106}", b'{"code":106} x', b'{"code":4294967402}',
                                    b'{"code":106,"x":NaN}', b'{"code":"abc"}'])
def test_fastjson2_refuses_what_5x_refuses(header: bytes) -> None:
    with pytest.raises(FrameError):
        decode_command(struct.pack(">I", len(header)) + header, fastjson2=True)
    if header == b"{code:106}":  # fastjson 1 (4.9) reads unquoted field names
        assert decode_command(struct.pack(">I", len(header)) + header).code == 106


SYNC = "rmq_sys_SYNC_BROKER_MEMBER_b"


def _shared_route_layout(ctx: NodeContext) -> list[str]:
    """A master and a slave of `b` with T, U, O and the sync topic alike, V unlike, and S
    alike but for its static mapping; then the master goes (its slave may act for it); an
    order config for O. The topics, for the replies to compare."""
    topics = {"S": 4, "T": 4, "U": 4, "O": 4, SYNC: 4, "V": 8}
    info = {"bname": "b", "currIdMap": {"0": 0}, "dirty": False, "epoch": 7,
            "scope": "__global__", "topic": "S", "totalQueues": 1}
    for broker_id, addr in ((0, "10.0.0.1:10911"), (1, "10.0.0.2:10911")):
        cmd = five(register_request("b", addr, topics, broker_id=broker_id))
        configs = {t: register_body.topic_config(t, read_queue_nums=q, write_queue_nums=q)
                   for t, q in topics.items()}
        cmd.body = register_body.encode_register_body({"counter": 1, "timestamp": 1}, configs,
                                                      [], False, mappings={"S": info})
        assert cmd.ext_fields is not None
        cmd.ext_fields["bodyCrc32"] = "0"
        assert call(ctx, cmd).code == RC.SUCCESS
    call(ctx, request(104, {"clusterName": "DefaultCluster", "brokerAddr": "10.0.0.1:10911",
                            "brokerName": "b", "brokerId": "0"}))
    put = request(100, {"namespace": "ORDER_TOPIC_CONFIG", "key": "O", "value": "b:4"})
    assert call(ctx, put).code == RC.SUCCESS
    return list(topics)


@pytest.mark.parametrize("setting", ["", "supportActingMaster=true", "orderMessageEnable=true"])
def test_topics_the_store_calls_shared_get_equal_route_replies(ctx5: NodeContext,
                                                                setting: str) -> None:
    topics = _shared_route_layout(ctx5)
    if setting:
        assert call(ctx5, request(318, body=setting.encode())).code == RC.SUCCESS
    with ctx5.store.read() as t:
        shared = {topic: queries.shared_route(t, topic, five=True) for topic in topics}
    expected = {"": {"T", "U", "O"}, "supportActingMaster=true": {"T", "U", "O"},
                "orderMessageEnable=true": set()}[setting]
    assert {x for x in topics if x != "V" and shared[x] is not None} == expected
    assert shared["V"] != shared["T"] or not expected
    for version in (409, 0):  # both JSON flavours
        bodies = {x: call(ctx5, route_request(x, version=version)).body for x in topics}
        for x in topics:
            for y in topics:
                if shared[x] is not None and shared[x] == shared[y]:
                    assert bodies[x] == bodies[y], (x, y)
    if setting == "supportActingMaster=true":  # what sharing the sync topic would get wrong
        assert bodies["T"] != bodies[SYNC]


def test_the_io_workers_shared_routes_follow_a_setting_changed_later(ctx5: NodeContext
                                                                      ) -> None:
    _shared_route_layout(ctx5)
    shared = io_process._shared_route(ctx5.store, five=True)
    gen = ctx5.store.generation_token()
    assert shared("T", gen) is not None and shared("T", gen) == shared("U", gen)
    assert call(ctx5, request(318, body=b"orderMessageEnable=true")).code == RC.SUCCESS
    assert shared("T", gen) is None  # the store moved on
    later = ctx5.store.generation_token()
    assert later != gen and shared("T", later) is None and shared("U", later) is None
    assert call(ctx5, request(318, body=b"orderMessageEnable=false")).code == RC.SUCCESS
    again = ctx5.store.generation_token()
    assert shared("T", again) is not None and shared("T", again) == shared("U", again)


def test_no_route_is_shared_when_reads_are_signed(store: Store, tmp_path: Path) -> None:
    ctx = make_ctx(store, props={"aclEnable": "true", "aclReadsToo": "true"},
                   dialect=Dialect.V5_5_0)
    call(ctx, five(register_request("b", "10.0.0.1:10911", {"T": 4, "U": 4})))
    with store.read() as t:
        assert queries.shared_route(t, "T", five=True) is None
    nsconfig.initialize(store, {"rocketmqVersion": "5.5.0", "aclEnable": "true"}, "", "")
    with store.read() as t:
        assert queries.shared_route(t, "T", five=True) is not None
