"""Hypothesis settings and strategies for the codec's property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from cluster.core.protocol import register_body
from cluster.core.protocol.codes import LANGUAGES, SerializeType
from cluster.core.protocol.command import RemotingCommand

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def fuzz_settings(examples: int) -> settings:
    """Deterministic (derandomized, no example database) and bounded, for CI."""
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# Any text Python can encode as UTF-8 (hypothesis leaves out lone surrogates).
TEXT = st.text(max_size=40)
NONEMPTY = st.text(min_size=1, max_size=40)


@st.composite
def commands(draw: st.DrawFn, stype: SerializeType | None = None) -> RemotingCommand:
    """A RemotingCommand in the value range its header encoding carries.

    The binary header holds code and version as int16 and reads an empty remark, an
    empty extFields map or an empty extFields value as absent (as Java's
    RocketMQSerializable does for the first two), so those are drawn non-empty there."""
    if stype is None:
        stype = draw(st.sampled_from((SerializeType.JSON, SerializeType.ROCKETMQ)))
    binary = stype is SerializeType.ROCKETMQ
    small = INT16 if binary else INT32
    values = NONEMPTY if binary else TEXT
    ext = draw(st.none() | st.dictionaries(NONEMPTY, values, min_size=int(binary), max_size=6))
    language = draw(st.sampled_from(LANGUAGES) if binary
                    else st.none() | st.sampled_from(LANGUAGES))
    body = draw(st.none() | st.binary(min_size=1, max_size=300))
    return RemotingCommand(
        code=draw(small), opaque=draw(INT32), flag=draw(INT32), version=draw(small),
        language=language, remark=draw(st.none() | values), ext_fields=ext, body=body,
        serialize_type=stype)


def cuts(total: int) -> st.SearchStrategy[list[int]]:
    """Chunk sizes that add up to ``total``."""
    return st.lists(st.integers(0, total), max_size=12).map(
        lambda points: _sizes(sorted(set(points)), total))


def _sizes(points: list[int], total: int) -> list[int]:
    edges = [0, *points, total]
    return [b - a for a, b in zip(edges, edges[1:], strict=False) if b > a] or [total]


DATA_VERSION = st.fixed_dictionaries(
    {"counter": INT64, "timestamp": INT64}, optional={"stateVersion": INT64})

NAME = st.text(st.characters(exclude_categories=["Cs", "Zs", "Cc"]), min_size=1, max_size=20)
NO_SPACE = st.text(st.characters(exclude_categories=["Cs"], exclude_characters=" "),
                   max_size=12)


@st.composite
def topic_configs(draw: st.DrawFn, compressed: bool, attributes: bool
                  ) -> dict[str, dict[str, Any]]:
    """TopicConfigs keyed by name; in the compressed layout a config is one space-separated
    line without order or topicSysFlag, so those keep their defaults there."""
    names = draw(st.lists(NAME, max_size=5, unique=True))
    out = {}
    for name in names:
        out[name] = register_body.topic_config(
            name,
            read_queue_nums=draw(INT32), write_queue_nums=draw(INT32), perm=draw(INT32),
            topic_filter_type=draw(st.sampled_from(register_body.TOPIC_FILTER_TYPES)),
            topic_sys_flag=0 if compressed else draw(INT32),
            order=False if compressed else draw(st.booleans()),
            attributes=draw(st.dictionaries(NO_SPACE, NO_SPACE, max_size=3))
            if attributes else None)
    return out


BROKER_ADDRS = st.dictionaries(st.integers(0, 2**31 - 1), NONEMPTY, max_size=4)
BROKER_DATA = st.fixed_dictionaries(
    {"brokerAddrs": BROKER_ADDRS, "brokerName": TEXT, "cluster": TEXT},
    optional={"enableActingMaster": st.booleans(), "zoneName": TEXT})
QUEUE_DATA = st.fixed_dictionaries(
    {"brokerName": TEXT, "perm": INT32, "readQueueNums": INT32, "topicSysFlag": INT32,
     "writeQueueNums": INT32})
ROUTES = st.fixed_dictionaries({
    "brokerDatas": st.lists(BROKER_DATA, max_size=3),
    "filterServerTable": st.dictionaries(TEXT, st.lists(TEXT, max_size=3), max_size=3),
    "orderTopicConf": st.none() | TEXT,
    "queueDatas": st.lists(QUEUE_DATA, max_size=3),
})
