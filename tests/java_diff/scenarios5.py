"""Scenarios of what 5.x brokers and clients send, each on a pair of its own with the
NameServer settings it needs (the same on both sides).

Run against the Java 5.5.0 NameServer with the node following 5.x, and (those listed in
`BOTH`) against the 4.9 line with the node following 4.9.8, which ignores what 5.x adds
(acting master, zones, static topics, stateVersion) as Java 4.9 does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from cluster.core.protocol.codes import V5_5_0, SerializeType
from cluster.core.protocol.register_body import encode_register_body
from tests.java_diff import build as b
from tests.java_diff.scenarios import DV1, DV2, _addr, lacks, queries, unregister_step
from tests.java_diff.sides import Step

RQ = b.RQ
Scenario = Callable[[str, SerializeType], list[Step]]
FIVE = {"enableActingMaster": "true"}
OLD_STYLE = {"enableActingMaster": "false"}  # a 5.x broker without slave acting master
DV3 = {"counter": 3, "timestamp": 1700000000003}


def dv(counter: int, state: int) -> dict[str, int]:
    return {"counter": counter, "stateVersion": state, "timestamp": 1700000000000 + counter}


def member_group(c: str, n: str, st: SerializeType) -> Step:
    """4.9 does not answer code 901: a probe tells, instead of a reply timeout."""
    return Step(f"member group {n}", b.plain(RQ.GET_BROKER_MEMBER_GROUP, st, clusterName=c,
                                             brokerName=n), may_not_reply=True)


# ---------------------------------------------------------------- acting master

def acting_master(p: str, st: SerializeType) -> list[Step]:
    c, n, old = f"{p}C", f"{p}b", f"{p}o"
    m, s1, s2, om, os_ = (_addr(p, i) for i in range(1, 6))
    sync = f"rmq_sys_SYNC_BROKER_MEMBER_{p}"
    t = [b.topic(f"{p}T1"), b.topic(f"{p}T2", perm=7), b.topic(sync)]

    def reg(addr: str, name: str, bid: int, topics: list[dict[str, Any]],
            version: dict[str, int], extra: dict[str, str]) -> Step:
        return Step(f"register {name} id {bid} {addr}",
                    b.register(c, name, addr, bid, topics, version, stype=st, extra=extra),
                    conn=addr)

    return [
        reg(m, n, 0, t, DV1, FIVE), reg(s1, n, 1, t, DV1, FIVE), reg(s2, n, 2, t, DV1, FIVE),
        reg(om, old, 0, t, DV1, OLD_STYLE), reg(os_, old, 1, t, DV1, OLD_STYLE),
        *queries(p, st, [f"{p}T1", sync]), member_group(c, n, st),
        unregister_step("master leaves", c, n, m, 0, st),
        unregister_step("master of the old-style group leaves", c, old, om, 0, st),
        *queries(p, st, [f"{p}T1", f"{p}T2", sync]), member_group(c, n, st),
        reg(s1, n, 1, t, DV1, FIVE),
        reg(s1, n, 1, [*t, b.topic(f"{p}T3")], DV2, FIVE),
        *queries(p, st, [f"{p}T1", f"{p}T3"]),
        Step("close the acting master's connection", conn=s1, close=True,
             settle=((b.cluster_info(), lacks(s1)),)),
        *queries(p, st, [f"{p}T1"]),
        reg(m, n, 0, [*t, b.topic(f"{p}T3")], DV2, FIVE),
        *queries(p, st, [f"{p}T1", f"{p}T3"]), member_group(c, n, st),
    ]


# ---------------------------------------------------------------- static topics

def mapping(topic: str, bname: str, ids: dict[int, int], epoch: int) -> dict[str, Any]:
    return {"bname": bname, "currIdMap": {str(k): v for k, v in ids.items()}, "dirty": False,
            "epoch": epoch, "scope": "__global__", "topic": topic, "totalQueues": 4}


def static_body(topics: list[dict[str, Any]], version: dict[str, int],
                mappings: dict[str, dict[str, Any]], compressed: bool) -> bytes:
    table = {t["topicName"]: t for t in topics}
    return encode_register_body(version, table, [], compressed, mappings=mappings)


def static_topics(p: str, st: SerializeType) -> list[Step]:
    c, b1, b2 = f"{p}C", f"{p}b1", f"{p}b2"
    a1, a2 = _addr(p, 1), _addr(p, 2)
    ts, plain_t = f"{p}S", f"{p}T"
    topics = [b.topic(ts), b.topic(plain_t)]

    def reg(name: str, addr: str, version: dict[str, int], epoch: int,
            ids: dict[int, int], compressed: bool) -> Step:
        body = static_body(topics, version, {ts: mapping(ts, name, ids, epoch)}, compressed)
        return Step(f"register {name} epoch {epoch}{' compressed' if compressed else ''}",
                    b.register(c, name, addr, 0, body=body, compressed=compressed, stype=st,
                               version=V5_5_0), conn=addr)

    return [
        reg(b1, a1, DV1, 1700000000000, {0: 0, 1: 1}, False),
        reg(b2, a2, DV1, 1700000000000, {2: 0, 3: 1}, True),
        *queries(p, st, [ts, plain_t]),
        reg(b1, a1, DV1, 1700000000001, {0: 0, 1: 1}, False),  # same DataVersion: kept
        Step("route after a same-version mapping", b.route(ts, st)),
        reg(b1, a1, DV2, 1700000000002, {0: 1, 1: 0}, True),
        Step("route after a new mapping", b.route(ts, st, version=0)),
        unregister_step("unregister b2", c, b2, a2, 0, st),
        Step("route after b2 left", b.route(ts, st)),
        Step("delete the static topic", b.plain(RQ.DELETE_TOPIC_IN_NAMESRV, st, topic=ts)),
        Step("route after delete", b.route(ts, st)),
        reg(b1, a1, DV3, 1700000000003, {0: 0, 1: 1}, False),
        *queries(p, st, [ts]),
    ]


# ---------------------------------------------------------------- zones

def zone_route(topic: str, st: SerializeType, mode: str | None, zone: str | None,
               version: int = b.CLIENT_VERSION) -> Step:
    cmd = b.route(topic, st, version=version)
    assert cmd.ext_fields is not None
    if mode is not None:
        cmd.ext_fields["__ZONE_MODE"] = mode
    if zone is not None:
        cmd.ext_fields["__ZONE_NAME"] = zone
    return Step(f"route {topic} zone mode {mode} zone {zone!r} v{version}", cmd)


def zones(p: str, st: SerializeType) -> list[Step]:
    c, t = f"{p}C", f"{p}T"
    topics = [b.topic(t), b.topic(f"{p}U")]
    groups = [("za", "ZoneA"), ("zb", "zoneB"), ("zn", None), ("zl", "zonea")]
    steps = []
    for i, (name, zone) in enumerate(groups):
        extra = {**FIVE, **({} if zone is None else {"__ZONE_NAME": zone})}
        addr = _addr(p, i + 1)
        steps.append(Step(f"register {name} in {zone}", b.register(
            c, f"{p}{name}", addr, 0, topics, DV1, stype=st, extra=extra,
            filters=["127.0.0.1:29999"] if name == "zb" else None), conn=addr))
    lost = _addr(p, 9)
    steps += [
        Step("slave of zl", b.register(c, f"{p}zl", lost, 1, topics, DV1, stype=st,
                                       extra={**FIVE, "__ZONE_NAME": "zonea"}), conn=lost),
        unregister_step("master of zl leaves", c, f"{p}zl", _addr(p, 4), 0, st),
    ]
    for mode, zone in (("true", "ZoneA"), ("true", "zonea"), ("TRUE", "ZONEB"),
                       ("true", "nowhere"), ("true", "  "), ("false", "ZoneA"), ("true", None),
                       (None, "ZoneA")):
        steps.append(zone_route(t, st, mode, zone))
    steps += [zone_route(t, st, "true", "zoneB", version=0), *queries(p, st, [t])]
    return steps


# ---------------------------------------------------------------- liveness

LIVENESS = {"scanNotActiveBrokerInterval": "1000"}


def liveness(p: str, st: SerializeType) -> list[Step]:
    c, topics = f"{p}C", [b.topic(f"{p}T"), b.topic(f"{p}U")]
    a, lasting, odd = _addr(p, 1), _addr(p, 2), _addr(p, 3)

    def reg(name: str, addr: str, extra: dict[str, str]) -> Step:
        return Step(f"register {name}", b.register(c, f"{p}{name}", addr, 0, topics, DV1,
                                                   stype=st, extra=extra), conn=addr)

    return [
        reg("short", a, {"heartbeatTimeoutMillis": "1000"}),
        reg("lasting", lasting, {}),
        reg("odd", odd, {"heartbeatTimeoutMillis": "soon"}),
        Step("heartbeat", b.plain(RQ.BROKER_HEARTBEAT, st, clusterName=c, brokerAddr=lasting,
                                  brokerName=f"{p}lasting"),
             settle=((b.cluster_info(), lacks(a)),)),
        *queries(p, st, [f"{p}T"]),
        Step("heartbeat without cluster", b.plain(RQ.BROKER_HEARTBEAT, st, brokerAddr=lasting,
                                                  brokerName=f"{p}lasting")),
        Step("heartbeat of an unknown broker", b.plain(
            RQ.BROKER_HEARTBEAT, st, clusterName=c, brokerAddr=_addr(p, 8), brokerName="x")),
        Step("qdv of the expired broker", b.query_data_version(c, f"{p}short", a, 0, DV1, st)),
        Step("qdv without body", b.query_data_version(c, f"{p}lasting", lasting, 0, None, st)),
        Step("qdv in another cluster", b.query_data_version(f"{p}X", f"{p}lasting", lasting, 0,
                                                            DV1, st)),
    ]


# ---------------------------------------------------------------- registration rules

def registration_rules(p: str, st: SerializeType) -> list[Step]:
    c, n, n2, n3 = f"{p}C", f"{p}b", f"{p}b2", f"{p}b3"
    m, x, y, z = (_addr(p, i) for i in range(1, 5))
    t1, t2, t3 = (f"{p}T{i}" for i in range(1, 4))

    def reg(label: str, name: str, addr: str, topics: list[dict[str, Any]],
            version: dict[str, int], extra: dict[str, str] | None = None) -> Step:
        return Step(label, b.register(c, name, addr, 0, topics, version, stype=st,
                                      extra=extra or FIVE), conn=addr)

    return [
        reg("one topic first", n, m, [b.topic(t1)], DV1),
        Step("cluster info after one topic", b.cluster_info(st)),
        reg("two topics", n, m, [b.topic(t1), b.topic(t2)], DV1),
        reg("one more topic, same version", n, m, [b.topic(t3)], DV1),
        reg("changed queues, same version", n, m, [b.topic(t1, queues=2)], DV1),
        *queries(p, st, [t1, t3]),
        reg("changed queues, new version", n, m, [b.topic(t1, queues=2)], DV2),
        Step("route after new version", b.route(t1, st)),
        reg("state 5 takes id 0", n2, x, [b.topic(t1), b.topic(t2)], dv(1, 5)),
        reg("state 3 for id 0 is stale", n2, y, [b.topic(t1), b.topic(t2)], dv(1, 3)),
        Step("cluster info after a stale registration", b.cluster_info(st)),
        Step("qdv of the stale one", b.query_data_version(c, n2, y, 0, dv(1, 3), st)),
        reg("state 7 takes id 0", n2, y, [b.topic(t1), b.topic(t2)], dv(2, 7)),
        Step("cluster info after a newer state", b.cluster_info(st)),
        reg("split: first part", n3, z, [b.topic(f"{p}S1"), b.topic(f"{p}S2")], DV1),
        reg("split: second part", n3, z, [b.topic(f"{p}S3"), b.topic(f"{p}S4")], DV1),
        Step("topics of the split broker", b.plain(RQ.GET_TOPICS_BY_CLUSTER, st, cluster=c)),
        Step("route of the second part", b.route(f"{p}S3", st)),
    ]


DELETE_WITH_REGISTRATION = {"deleteTopicWithBrokerRegistration": "true"}


def delete_with_registration(p: str, st: SerializeType) -> list[Step]:
    c, n, m = f"{p}C", f"{p}b", _addr(p, 1)
    t1, t2, t3 = (b.topic(f"{p}T{i}") for i in range(1, 4))
    static = static_body([t1, b.topic(f"{p}S")], dv(5, 0),
                         {f"{p}S": mapping(f"{p}S", n, {0: 0}, 1)}, False)
    return [
        Step("three topics", b.register(c, n, m, 0, [t1, t2, t3], DV1, stype=st, extra=FIVE),
             conn=m),
        Step("two of them, new version", b.register(c, n, m, 0, [t1, t2], DV2, stype=st,
                                                    extra=FIVE), conn=m),
        Step("all topics", b.plain(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, st)),
        Step("one of them", b.register(c, n, m, 0, [t1], DV3, stype=st, extra=FIVE), conn=m),
        Step("all topics after one", b.plain(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, st)),
        Step("a static topic table deletes nothing", b.register(
            c, n, m, 0, body=static, stype=st, extra=FIVE, version=V5_5_0), conn=m),
        *queries(p, st, [f"{p}T1", f"{p}S"]),
    ]


# ---------------------------------------------------------------- REGISTER_TOPIC_IN_NAMESRV

def register_topic_requests(p: str, st: SerializeType) -> list[Step]:
    c, b1, b2 = f"{p}C", f"{p}b1", f"{p}b2"
    a1, a2 = _addr(p, 1), _addr(p, 2)
    topics = [b.topic(f"{p}T"), b.topic(f"{p}U")]

    def queue(name: str, queues: int) -> dict[str, Any]:
        return {"brokerName": name, "perm": 6, "readQueueNums": queues, "topicSysFlag": 0,
                "writeQueueNums": queues}

    def register_topic(label: str, topic: str | None, datas: list[dict[str, Any]] | None,
                       raw: bytes | None = None) -> Step:
        ext = None if topic is None else {"topic": topic}
        body = raw if raw is not None else (
            None if datas is None else orjson.dumps({"queueDatas": datas}))
        return Step(label, b.cmd(RQ.REGISTER_TOPIC_IN_NAMESRV, ext, body, st))

    return [
        Step("b1", b.register(c, b1, a1, 0, topics, DV1, stype=st, extra=FIVE), conn=a1),
        Step("b2", b.register(c, b2, a2, 0, topics, DV1, stype=st, extra=FIVE), conn=a2),
        register_topic("new topic on both", f"{p}N", [queue(b1, 2), queue(b2, 3)]),
        register_topic("unknown broker stops it", f"{p}N2",
                       [queue(b1, 2), queue(f"{p}zz", 1), queue(b2, 3)]),
        register_topic("existing topic", f"{p}T",
                       [queue(b2, 5), queue(f"{p}zz", 1), queue(b1, 7)]),
        register_topic("no queue datas", f"{p}N3", []),
        register_topic("no topic", None, [queue(b1, 1)]),
        register_topic("body not JSON", f"{p}N4", None, raw=b"{not json"),
        *queries(p, st, [f"{p}N", f"{p}N2", f"{p}T", f"{p}N3"]),
    ]


# Scenarios grouped by the NameServer settings they run with (one pair per group, both
# encodings). `five_only`: requests or header fields 4.9 answers differently on purpose
# (README: codes 217, 901, 904; heartbeatTimeoutMillis).
GROUPS: dict[str, tuple[dict[str, str], list[Scenario], bool]] = {
    "acting-static-zones-rules": ({"supportActingMaster": "true"},
                                  [acting_master, static_topics, zones, registration_rules],
                                  False),
    "delete-with-registration": (DELETE_WITH_REGISTRATION, [delete_with_registration], False),
    "register-topic": ({}, [register_topic_requests], True),
    "liveness": (LIVENESS, [liveness], True),
}
