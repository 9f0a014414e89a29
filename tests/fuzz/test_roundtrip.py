"""Property tests: what the codec encodes it decodes back, however the bytes arrive."""

from __future__ import annotations

import contextlib
import zlib
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from cluster.client.admin_requests import decode_member_group
from cluster.core.protocol import admin_bodies, body_common, fastjson, register_body, route_bodies
from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameReader, decode_command, decode_frame, encode_command
from cluster.core.protocol.properties import format_properties, parse_properties
from tests.fuzz.strategies import (
    BROKER_ADDRS,
    BROKER_DATA,
    DATA_VERSION,
    ROUTES,
    TEXT,
    commands,
    cuts,
    fuzz_settings,
    topic_configs,
)

NOW = 1_700_000_000_000


def feed_in_chunks(data: bytes, sizes: list[int]) -> list[bytes]:
    reader = FrameReader()
    frames: list[bytes] = []
    pos = 0
    for n in sizes:
        frames += reader.feed(data[pos : pos + n])
        pos += n
    assert pos == len(data)
    assert reader.buffered == 0
    assert all(type(f) is bytes for f in frames)
    return frames


@fuzz_settings(400)
@given(st.data())
def test_command_round_trip_in_any_chunking(data: st.DataObject) -> None:
    cmd = data.draw(commands())
    wire = encode_command(cmd)
    frames = feed_in_chunks(wire, data.draw(cuts(len(wire))))
    assert len(frames) == 1
    assert decode_command(frames[0]) == cmd
    assert decode_frame(wire) == cmd


@fuzz_settings(150)
@given(st.data())
def test_stream_of_commands_in_both_encodings(data: st.DataObject) -> None:
    cmds = data.draw(st.lists(commands(), min_size=1, max_size=6))
    wire = b"".join(encode_command(c) for c in cmds)
    frames = feed_in_chunks(wire, data.draw(cuts(len(wire))))
    assert [decode_command(f) for f in frames] == cmds


@fuzz_settings(100)
@given(st.data())
def test_command_round_trip_one_byte_at_a_time(data: st.DataObject) -> None:
    cmd = data.draw(commands(data.draw(st.sampled_from(list(SerializeType)))))
    wire = encode_command(cmd)
    reader = FrameReader()
    frames = [f for b in wire for f in reader.feed(bytes([b]))]
    assert [decode_command(f) for f in frames] == [cmd]


def _bean(cfg: dict[str, Any], compressed: bool) -> dict[str, Any]:
    """What a decoder returns for a config: the compressed line drops order and sysFlag."""
    if compressed:
        return register_body.topic_config(
            cfg["topicName"], read_queue_nums=cfg["readQueueNums"],
            write_queue_nums=cfg["writeQueueNums"], perm=cfg["perm"],
            topic_filter_type=cfg["topicFilterType"], attributes=cfg.get("attributes"))
    return cfg


@fuzz_settings(200)
@given(st.data())
def test_register_body_round_trip(data: st.DataObject) -> None:
    compressed = data.draw(st.booleans(), "compressed")
    with_attributes = data.draw(st.booleans(), "attributes")
    dv = data.draw(DATA_VERSION)
    topics = data.draw(topic_configs(compressed, with_attributes))
    # A plain body without filterServerList reads as [] (fastjson omits the null), as in
    # Java where the list is never null; only the compressed layout writes "null".
    filters = data.draw((st.none() if compressed else st.nothing()) | st.lists(TEXT, max_size=3))
    version = data.draw(st.sampled_from((register_body.V3_0_11, 400, register_body.V5_0_0)))
    body = register_body.encode_register_body(dv, topics, filters, compressed,
                                              with_attributes=with_attributes)
    rb = register_body.decode_register_body(body, compressed, version, now_ms=NOW)
    assert rb.data_version == dv
    assert rb.topic_configs == {k: _bean(c, compressed) for k, c in topics.items()}
    assert rb.filter_servers == filters
    queues = register_body.decode_register_queues(body, compressed, version, now_ms=NOW)
    assert queues == register_body.queue_fields(topics)
    head = register_body.register_head(body, compressed, version, now_ms=NOW)
    if compressed:
        assert head is None
    elif head is not None:
        assert (head.data_version, head.filter_servers) == (dv, filters)
    # The shortcut reads the filter list with a bracket-free pattern; without brackets
    # in the addresses it must take every plain body.
    plain_filters = not any(set(f) & set("[]{}") for f in filters or ())
    assert compressed or not plain_filters or head is not None


@fuzz_settings(100)
@given(DATA_VERSION, topic_configs(False, False))
def test_register_wrapper_before_v3_0_11(dv: dict[str, int],
                                         topics: dict[str, dict[str, Any]]) -> None:
    """Brokers older than V3_0_11 send the TopicConfigSerializeWrapper alone."""
    body = register_body.encode_register_body(dv, topics, [], False)
    wrapper = fastjson.dumpb(orjson.loads(body)["topicConfigSerializeWrapper"])
    rb = register_body.decode_register_body(wrapper, False, 36, now_ms=NOW)
    assert (rb.data_version, rb.topic_configs, rb.filter_servers) == (dv, topics, None)


@fuzz_settings(200)
@given(ROUTES, st.booleans())
def test_topic_route_round_trip(route: dict[str, Any], standard: bool) -> None:
    body = route_bodies.encode_topic_route(route, standard)
    assert route_bodies.decode_topic_route(body) == route


@fuzz_settings(150)
@given(st.dictionaries(TEXT, BROKER_DATA, max_size=3),
       st.dictionaries(TEXT, st.lists(TEXT, max_size=3), max_size=3))
def test_cluster_info_round_trip(brokers: dict[str, Any], clusters: dict[str, list[str]]
                                 ) -> None:
    got = route_bodies.decode_cluster_info(route_bodies.encode_cluster_info(brokers, clusters))
    assert got == {"brokerAddrTable": brokers, "clusterAddrTable": clusters}


@fuzz_settings(150)
@given(st.dictionaries(TEXT, TEXT, max_size=6))
def test_kv_table_round_trip(table: dict[str, str]) -> None:
    body = admin_bodies.encode_kv_table(table)
    assert admin_bodies.decode_kv_table(body) == table
    assert admin_bodies.decode_register_result_body(body) == table


@fuzz_settings(150)
@given(st.lists(TEXT, max_size=6), st.none() | TEXT)
def test_topic_list_round_trip(topics: list[str], broker_addr: str | None) -> None:
    got = admin_bodies.decode_topic_list(admin_bodies.encode_topic_list(topics, broker_addr))
    assert got == {"brokerAddr": broker_addr, "topicList": topics}


@fuzz_settings(150)
@given(DATA_VERSION)
def test_data_version_round_trip(dv: dict[str, int]) -> None:
    assert body_common.decode_data_version(body_common.encode_data_version(dv), now_ms=NOW) == dv


@fuzz_settings(150)
@given(st.none() | TEXT, st.none() | TEXT, BROKER_ADDRS)
def test_broker_member_group_round_trip(cluster: str | None, broker: str | None,
                                        addrs: dict[int, str]) -> None:
    got = decode_member_group(route_bodies.encode_broker_member_group(cluster, broker, addrs))
    assert got == {"cluster": cluster, "brokerName": broker, "brokerAddrs": addrs}


KEY = st.text(st.characters(categories=["Lu", "Ll", "Nd"], max_codepoint=0x7F),
              min_size=1, max_size=12)
# Properties.load skips the blanks before a value and reads backslashes as escapes.
VALUE = st.text(st.characters(exclude_categories=["Cs", "Cc", "Zl", "Zp"],
                              exclude_characters="\\"), max_size=20).filter(
    lambda v: not v.startswith(" "))


@fuzz_settings(150)
@given(st.dictionaries(KEY, VALUE, max_size=6))
def test_properties_round_trip(props: dict[str, str]) -> None:
    """``MixAll.properties2String`` output reads back with ``Properties.load`` rules for
    the plain keys and values it is used with."""
    assert parse_properties(format_properties(props)) == props


@fuzz_settings(100)
@given(st.binary(max_size=2000))
def test_compressed_block_layout_survives_any_payload(payload: bytes) -> None:
    """A compressed body that inflates to arbitrary bytes is decoded or refused, never
    more: the same contract as the plain decoders."""
    body = zlib.compress(payload)
    for version in (400, register_body.V5_0_0):
        with contextlib.suppress(body_common.BodyError):
            register_body.decode_register_body(body, True, version, now_ms=NOW)


def test_commands_strategy_reaches_both_encodings() -> None:
    """The strategies above are not vacuous: both header encodings and bodies occur."""
    seen: set[tuple[SerializeType, bool]] = set()

    @fuzz_settings(60)
    @given(commands())
    def collect(cmd: RemotingCommand) -> None:
        seen.add((cmd.serialize_type, cmd.body is not None))

    collect()
    assert seen == {(s, b) for s in SerializeType for b in (False, True)}
