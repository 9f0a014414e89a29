"""Behaviours pinned down by diffing against the real Java NameServer 4.9.8 (tests/java_diff)."""

from __future__ import annotations

import pytest

from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import java_int
from cluster.core.protocol.frame import FrameError, decode_command, encode_command
from cluster.core.protocol.lenient import loads_lenient
from state.route import java_order
from state.store import Store
from tests.unit.test_processors import RC, C, body_json, call, register_request, request
from worker.business.context import NodeContext
from worker.business.processors import on_channel_destroy


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("-5", -5), ("+7", 7), ("2147483647", 2**31 - 1), ("-2147483648", -(2**31)),
    ("2147483648", None), ("3184491900", None), ("x1", None), ("", None), (" 1", None),
    (None, None)])
def test_java_int_is_integer_parse_int(text: str | None, value: int | None) -> None:
    assert java_int(text) == value


def _register(ctx: NodeContext, crc: str, name: str = "a") -> tuple[int, str | None]:
    cmd = register_request(name, f"{name}:1", {"T": 4})
    assert cmd.ext_fields is not None
    cmd.ext_fields["bodyCrc32"] = crc
    reply = call(ctx, cmd)
    return reply.code, reply.remark


@pytest.mark.parametrize("crc", ["3184491900", "8589934592", "x1", ""])
def test_crc_that_is_no_int32_is_not_checked(ctx: NodeContext, crc: str) -> None:
    assert _register(ctx, crc) == (0, None)
    assert "a" in body_json(call(ctx, request(106)))["brokerAddrTable"]


def test_crc_mismatch_reply_has_empty_ext_fields(ctx: NodeContext) -> None:
    cmd = register_request("a", "a:1", {"T": 4})
    assert cmd.ext_fields is not None
    cmd.ext_fields["bodyCrc32"] = "12345"
    reply = call(ctx, cmd)
    assert (reply.code, reply.remark, reply.ext_fields) == (RC.SYSTEM_ERROR, "crc32 not match", {})


def test_exception_replies_are_json_whatever_the_request(ctx: NodeContext) -> None:
    cmd = register_request("a", "a:1", {"T": 4})
    assert cmd.ext_fields is not None
    cmd.ext_fields["brokerId"] = "one"
    cmd.serialize_type = SerializeType.ROCKETMQ
    reply = call(ctx, cmd)
    assert (reply.code, reply.serialize_type) == (RC.SYSTEM_ERROR, SerializeType.JSON)
    ok = call(ctx, request(106))
    ok_binary = request(106)
    ok_binary.serialize_type = SerializeType.ROCKETMQ
    assert ok.serialize_type is SerializeType.JSON
    assert call(ctx, ok_binary).serialize_type is SerializeType.ROCKETMQ


def test_null_header_fields_follow_java(ctx: NodeContext) -> None:
    route = call(ctx, request(105))
    assert route.code == RC.TOPIC_NOT_EXIST
    assert route.remark is not None and route.remark.startswith(
        "No topic route info in name server for the topic: null\nSee ")
    assert call(ctx, request(205)).ext_fields == {"wipeTopicCount": "0"}
    assert call(ctx, request(327)).ext_fields == {"addTopicCount": "0"}
    assert call(ctx, request(216)).code == 0


def test_system_topic_list_holds_cluster_sets_and_a_broker_address(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    call(ctx, register_request("a", "a:1", {"T": 4}, cluster="C2"))
    listed = body_json(call(ctx, request(304)))
    assert sorted(listed["topicList"]) == sorted([C, "C2", "a"])
    assert listed["brokerAddr"] == "a:1"


def test_closed_connection_leaves_the_first_cluster_in_java_order(store: Store,
                                                                 ctx: NodeContext) -> None:
    """A broker name in two clusters loses only the first cluster Java's HashMap yields."""
    clusters = [f"c{i}" for i in range(20)]
    for c in clusters:
        call(ctx, register_request("a", "a:1", {"T": 4}, cluster=c), channel="0.1.9")
    with store.read() as t:
        first = java_order(t, "cluster", clusters)[0]
    assert first != "c0"  # Java's order, not the insertion or sorted order
    on_channel_destroy(ctx, [("0.1.9", "")])
    left = body_json(call(ctx, request(106)))["clusterAddrTable"]
    assert first not in left and set(left) == set(clusters) - {first}


@pytest.mark.parametrize(("text", "value"), [
    ("{'a':'x',}", {"a": "x"}), ("{a:1,,b:[1,2,],}", {"a": 1, "b": [1, 2]}),
    ('{0:"z"}', {"0": "z"}), ("{'s':'it\\'s \\u00e9'}", {"s": "it's \u00e9"})])
def test_lenient_json_accepts_what_fastjson_accepts(text: str, value: object) -> None:
    assert loads_lenient(text) == value


@pytest.mark.parametrize("text", ["{{{", "{'a'}", "{a:1 b:2}", "[1", "{'a':'x"])
def test_lenient_json_still_refuses_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        loads_lenient(text)


def _json_frame(header: str) -> bytes:
    data = header.encode()
    return len(data).to_bytes(4, "big") + data


def test_header_language_ordinal_out_of_range_is_malformed() -> None:
    assert decode_command(_json_frame('{"code":106,"language":3}')).language == "PYTHON"
    assert decode_command(_json_frame('{"code":106,"language":"COBOL"}')).language is None
    with pytest.raises(FrameError):
        decode_command(_json_frame('{"code":106,"language":99}'))


def test_lenient_json_header_decodes() -> None:
    cmd = decode_command(_json_frame("{code:101,'opaque':4,extFields:{'key':'k',},}"))
    assert (cmd.code, cmd.opaque, cmd.ext_fields) == (101, 4, {"key": "k"})
    assert decode_command(encode_command(cmd)[4:]).ext_fields == {"key": "k"}
