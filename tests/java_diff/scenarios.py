"""The scenario corpus: request sequences run against both servers.

Each scenario is a function of a name prefix (so scenarios sharing one pair
never touch each other's brokers, topics or namespaces) and the header encoding
its requests use. Scenarios listed in FRESH need a pair of their own: they
change node-wide settings, need empty tables, or leave the sides deliberately
different.
"""

from __future__ import annotations

from collections.abc import Callable

from cluster.core.protocol import body_common, fastjson
from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import RemotingCommand
from tests.java_diff import build as b
from tests.java_diff.allowlist import BAD_CONFIG_VALUE, SEVERAL_BROKERS
from tests.java_diff.normalize import parse_body
from tests.java_diff.sides import Step

RQ = b.RQ
Scenario = Callable[[str, SerializeType], list[Step]]
DV1 = {"counter": 1, "timestamp": 1700000000001}
DV2 = {"counter": 2, "timestamp": 1700000000002}


_PREFIXES: dict[str, int] = {}


def _addr(p: str, n: int) -> str:
    """A broker address unique to the scenario prefix (never dialled)."""
    index = _PREFIXES.setdefault(p, len(_PREFIXES) + 1)
    return f"10.{index // 250}.{index % 250}.{n}:{10911 + n}"


def unregister_step(label: str, cluster: str, name: str, addr: str, broker_id: int,
                    st: SerializeType) -> Step:
    """UNREGISTER_BROKER, settled once `addr` has no live entry in `cluster` and `name` is
    not left without addresses: 5.x answers when it has queued the request and applies it
    a moment later. Where `addr` never had a live entry (a registration 5.x refused), the
    removal of a broker name left with no address is the only sign that it has."""
    return Step(label, b.unregister(cluster, name, addr, broker_id, st),
                settle=((b.query_data_version(cluster, name, addr, broker_id, DV1),
                         lambda r: r.body is None),
                        (b.cluster_info(st), has_addresses_or_none(name))))


def has_addresses_or_none(name: str) -> Callable[[RemotingCommand], bool]:
    """A cluster info holding no entry for broker `name`, or one with an address: every
    release removes a broker name whose last address an unregistration took."""
    def holds(r: RemotingCommand) -> bool:
        table = parse_body(r.body)
        entry = table.get("brokerAddrTable", {}).get(name) if isinstance(table, dict) else None
        return entry is None or bool(entry.get("brokerAddrs"))
    return holds


def contains(text: str) -> Callable[[RemotingCommand], bool]:
    return lambda r: r.body is not None and text.encode() in r.body


def lacks(text: str) -> Callable[[RemotingCommand], bool]:
    return lambda r: r.body is None or text.encode() not in r.body


def queries(p: str, st: SerializeType, topics: list[str]) -> list[Step]:
    """Every read a client or mqadmin makes, for the topics given."""
    steps = [Step("cluster info", b.cluster_info(st)),
             Step("all topics", b.plain(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, st)),
             Step("system topics", b.plain(RQ.GET_SYSTEM_TOPIC_LIST_FROM_NS, st)),
             Step("unit topics", b.plain(RQ.GET_UNIT_TOPIC_LIST, st)),
             Step("has-unit-sub topics", b.plain(RQ.GET_HAS_UNIT_SUB_TOPIC_LIST, st)),
             Step("unit-sub-ununit topics", b.plain(RQ.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, st))]
    for t in topics:
        steps += [Step(f"route {t} v409", b.route(t, st)),
                  Step(f"route {t} v0", b.route(t, st, version=0)),
                  Step(f"route {t} v0 standard", b.route(t, st, version=0, standard=True))]
    return steps


# ---------------------------------------------------------------- KV config

def kv(p: str, st: SerializeType) -> list[Step]:
    ns = f"{p}ns"
    return [
        Step("kv list unknown", b.plain(RQ.GET_KVLIST_BY_NAMESPACE, st, namespace=ns)),
        Step("kv put", b.put_kv(ns, "k1", "v1", st)),
        Step("kv put unicode", b.put_kv(ns, "k2", "wert \u00e9\u4e2d \"q\" \\ /\t", st)),
        Step("kv get", b.plain(RQ.GET_KV_CONFIG, st, namespace=ns, key="k1")),
        Step("kv get unicode", b.plain(RQ.GET_KV_CONFIG, st, namespace=ns, key="k2")),
        Step("kv get miss", b.plain(RQ.GET_KV_CONFIG, st, namespace=ns, key="nope")),
        Step("kv list", b.plain(RQ.GET_KVLIST_BY_NAMESPACE, st, namespace=ns)),
        Step("kv put without key", b.plain(RQ.PUT_KV_CONFIG, st, namespace=ns, value="v")),
        Step("kv put without value", b.plain(RQ.PUT_KV_CONFIG, st, namespace=ns, key="k3")),
        Step("kv get valueless", b.plain(RQ.GET_KV_CONFIG, st, namespace=ns, key="k3")),
        Step("kv delete", b.plain(RQ.DELETE_KV_CONFIG, st, namespace=ns, key="k1")),
        Step("kv delete unknown ns", b.plain(RQ.DELETE_KV_CONFIG, st, namespace=f"{p}x", key="k")),
        Step("kv get deleted", b.plain(RQ.GET_KV_CONFIG, st, namespace=ns, key="k1")),
        Step("kv list after delete", b.plain(RQ.GET_KVLIST_BY_NAMESPACE, st, namespace=ns)),
        Step("kv delete last", b.plain(RQ.DELETE_KV_CONFIG, st, namespace=ns, key="k2")),
        Step("kv list emptied ns", b.plain(RQ.GET_KVLIST_BY_NAMESPACE, st, namespace=ns)),
        Step("kv oneway put", b.put_kv(ns, "k4", "v4", st, oneway=True),
             settle=((b.plain(RQ.GET_KV_CONFIG, namespace=ns, key="k4"), contains_ext("v4")),)),
        Step("kv get after oneway", b.plain(RQ.GET_KV_CONFIG, st, namespace=ns, key="k4")),
    ]


def contains_ext(value: str) -> Callable[[RemotingCommand], bool]:
    return lambda r: (r.ext_fields or {}).get("value") == value


# ---------------------------------------------------------------- registration

def master_slave(p: str, st: SerializeType) -> list[Step]:
    c, n = f"{p}C", f"{p}b"
    m, s = _addr(p, 1), _addr(p, 2)
    t1, t2 = f"{p}T1", f"{p}T2"
    topics = [b.topic(t1), b.topic(t2, queues=8, perm=7)]
    return [
        Step("master registers", b.register(c, n, m, 0, topics, DV1, stype=st), conn=m),
        *queries(p, st, [t1, t2, f"{p}none"]),
        Step("slave registers", b.register(c, n, s, 1, topics, DV1, stype=st), conn=s),
        Step("slave re-registers", b.register(c, n, s, 1, topics, DV2, stype=st), conn=s),
        *queries(p, st, [t1]),
        Step("master re-registers same version",
             b.register(c, n, m, 0, [b.topic(t1, queues=2)], DV1, stype=st), conn=m),
        Step("route after same-version", b.route(t1, st)),
        Step("master new version", b.register(c, n, m, 0, [b.topic(t1, queues=2)], DV2,
                                              stype=st), conn=m),
        Step("route after new version", b.route(t1, st)),
        Step("qdv same", b.query_data_version(c, n, m, 0, DV2, st), conn=m),
        Step("qdv other", b.query_data_version(c, n, m, 0, DV1, st), conn=m),
        Step("qdv unknown broker", b.query_data_version(c, n, _addr(p, 9), 0, DV1, st)),
        Step("qdv without body", b.query_data_version(c, n, m, 0, None, st), conn=m),
        Step("qdv without brokerAddr", b.cmd(RQ.QUERY_DATA_VERSION, {"brokerName": n},
                                             body_common.encode_data_version(DV1), st)),
        unregister_step("master unregisters", c, n, m, 0, st),
        Step("cluster info, slave left", b.cluster_info(st)),
        Step("route, slave left", b.route(t1, st)),
        Step("route v0, slave left", b.route(t1, st, version=0)),
        unregister_step("slave unregisters", c, n, s, 1, st),
        *queries(p, st, [t1]),
    ]


def slave_then_master_leave(p: str, st: SerializeType) -> list[Step]:
    c, n = f"{p}C", f"{p}b"
    m, s = _addr(p, 1), _addr(p, 2)
    return [
        Step("master registers", b.register(c, n, m, 0, [b.topic(f"{p}T")], DV1, stype=st),
             conn=m),
        Step("slave registers", b.register(c, n, s, 1, [], DV1, stype=st), conn=s),
        unregister_step("slave unregisters", c, n, s, 1, st),
        Step("cluster info", b.cluster_info(st)),
        unregister_step("master unregisters", c, n, m, 0, st),
        Step("cluster info, both gone", b.cluster_info(st)),
        unregister_step("unregister unknown", c, f"{p}zz", m, 0, st),
    ]


def id_switch(p: str, st: SerializeType) -> list[Step]:
    c, n = f"{p}C", f"{p}b"
    m, s = _addr(p, 1), _addr(p, 2)
    tp = f"{p}T"
    return [
        Step("master", b.register(c, n, m, 0, [b.topic(tp)], DV1, stype=st), conn=m),
        Step("slave", b.register(c, n, s, 1, [b.topic(tp)], DV1, stype=st), conn=s),
        unregister_step("master leaves", c, n, m, 0, st),
        Step("slave becomes master", b.register(c, n, s, 0, [b.topic(tp, queues=3)], DV2,
                                                stype=st), conn=s),
        Step("cluster info", b.cluster_info(st)),
        Step("route", b.route(tp, st)),
        Step("old master back as slave", b.register(c, n, m, 1, [], DV1, stype=st), conn=m),
        Step("route both", b.route(tp, st, version=0)),
        Step("same addr under id 2", b.register(c, n, m, 2, [], DV1, stype=st), conn=m),
        Step("cluster info after id 2", b.cluster_info(st)),
        Step("other addr takes id 0", b.register(c, n, _addr(p, 3), 0, [], DV1, stype=st),
             conn=_addr(p, 3)),
        Step("cluster info after takeover", b.cluster_info(st)),
    ]


def two_clusters(p: str, st: SerializeType) -> list[Step]:
    n, m = f"{p}b", _addr(p, 1)
    return [
        Step("register in C1", b.register(f"{p}C1", n, m, 0, [b.topic(f"{p}T")], DV1, stype=st),
             conn=m),
        Step("register in C2", b.register(f"{p}C2", n, m, 0, [b.topic(f"{p}T")], DV1, stype=st),
             conn=m),
        Step("cluster info", b.cluster_info(st)),
        Step("topics by C1", b.plain(RQ.GET_TOPICS_BY_CLUSTER, st, cluster=f"{p}C1")),
        Step("topics by C2", b.plain(RQ.GET_TOPICS_BY_CLUSTER, st, cluster=f"{p}C2")),
        unregister_step("unregister from C2", f"{p}C2", n, m, 0, st),
        Step("cluster info after", b.cluster_info(st)),
        Step("system topics", b.plain(RQ.GET_SYSTEM_TOPIC_LIST_FROM_NS, st)),
    ]


def bodies_and_crc(p: str, st: SerializeType) -> list[Step]:
    c, n = f"{p}C", f"{p}b"
    addrs = [_addr(p, i) for i in range(1, 12)]
    topics = [b.topic(f"{p}T{i}", queues=i + 1) for i in range(3)]
    body = b.register_body(topics, DV1)
    zbody = b.register_body(topics, DV1, compressed=True)
    crc = body_common.crc32_java(body)
    steps = [
        Step("compressed", b.register(c, n, addrs[0], 0, topics, DV1, compressed=True, stype=st),
             conn=addrs[0]),
        Step("route compressed", b.route(f"{p}T1", st)),
        Step("crc 0", b.register(c, f"{n}0", addrs[1], 0, body=body, crc="0", stype=st)),
        Step("crc mismatch", b.register(c, f"{n}1", addrs[2], 0, body=body, crc=str(crc ^ 1),
                                        stype=st)),
        Step("crc negative", b.register(c, f"{n}2", addrs[3], 0, body=body, crc="-5", stype=st)),
        Step("crc unsigned", b.register(c, f"{n}3", addrs[4], 0, body=body,
                                        crc=str(crc | 0x80000000), stype=st)),
        Step("crc above 2^32", b.register(c, f"{n}4", addrs[5], 0, body=body,
                                          crc=str(1 << 33), stype=st)),
        Step("crc not a number", b.register(c, f"{n}5", addrs[6], 0, body=body, crc="x1",
                                            stype=st)),
        Step("crc empty", b.register(c, f"{n}6", addrs[7], 0, body=body, crc="", stype=st)),
        Step("compressed crc of plain", b.register(c, f"{n}7", addrs[8], 0, body=zbody,
                                                   compressed=True, crc=str(crc), stype=st)),
        Step("no body", b.register(c, f"{n}8", addrs[9], 0, body=b"", stype=st)),
        Step("old version wrapper", b.register(
            c, f"{n}9", addrs[10], 0, body=fastjson.dumpb(
                {"dataVersion": DV1, "topicConfigTable": {t["topicName"]: t for t in topics}}),
            stype=st, version=30)),
        Step("garbage body", b.register(c, f"{n}10", addrs[0], 1, body=b"{not json", stype=st)),
        Step("garbage compressed", b.register(c, f"{n}11", addrs[0], 1, body=b"\x78\x9cxx",
                                              compressed=True, stype=st)),
        Step("filter servers", b.register(c, f"{n}12", addrs[1], 0, [b.topic(f"{p}F")], DV1,
                                          filters=["127.0.0.1:20000"], stype=st)),
        Step("route with filter server", b.route(f"{p}F", st)),
        Step("route v0 with filter server", b.route(f"{p}F", st, version=0)),
        Step("brokerId not a number", b.register(c, f"{n}13", addrs[2], 0, body=body, stype=st,
                                                 extra={"brokerId": "one"})),
        Step("cluster info", b.cluster_info(st)),
    ]
    return steps


def unit_and_perm(p: str, st: SerializeType) -> list[Step]:
    c, n, m = f"{p}C", f"{p}b", _addr(p, 1)
    topics = [b.topic(f"{p}U{flag}", sysflag=flag) for flag in range(4)]
    topics.append(b.topic(f"{p}P", perm=7))
    return [
        Step("register unit topics", b.register(c, n, m, 0, topics, DV1, stype=st), conn=m),
        *queries(p, st, [f"{p}P"]),
        Step("wipe", b.plain(RQ.WIPE_WRITE_PERM_OF_BROKER, st, brokerName=n)),
        Step("route wiped", b.route(f"{p}P", st)),
        Step("wipe again", b.plain(RQ.WIPE_WRITE_PERM_OF_BROKER, st, brokerName=n)),
        Step("add", b.plain(RQ.ADD_WRITE_PERM_OF_BROKER, st, brokerName=n)),
        Step("route added", b.route(f"{p}P", st)),
        Step("wipe unknown", b.plain(RQ.WIPE_WRITE_PERM_OF_BROKER, st, brokerName=f"{p}zz")),
        Step("add unknown", b.plain(RQ.ADD_WRITE_PERM_OF_BROKER, st, brokerName=f"{p}zz")),
        Step("topics by cluster", b.plain(RQ.GET_TOPICS_BY_CLUSTER, st, cluster=c)),
        Step("topics by unknown cluster", b.plain(RQ.GET_TOPICS_BY_CLUSTER, st,
                                                  cluster=f"{p}zz")),
        Step("delete topic in other cluster", b.plain(RQ.DELETE_TOPIC_IN_NAMESRV, st,
                                                      topic=f"{p}U1", clusterName=f"{p}zz")),
        Step("route kept", b.route(f"{p}U1", st)),
        Step("delete topic in cluster", b.plain(RQ.DELETE_TOPIC_IN_NAMESRV, st, topic=f"{p}U1",
                                                clusterName=c)),
        Step("delete topic", b.plain(RQ.DELETE_TOPIC_IN_NAMESRV, st, topic=f"{p}U2")),
        Step("delete unknown topic", b.plain(RQ.DELETE_TOPIC_IN_NAMESRV, st, topic=f"{p}zz")),
        *queries(p, st, [f"{p}U1", f"{p}U2"]),
    ]


def order_topics(p: str, st: SerializeType) -> list[Step]:
    c, n, m = f"{p}C", f"{p}b", _addr(p, 1)
    tp = f"{p}O"
    return [
        Step("order conf", b.put_kv("ORDER_TOPIC_CONFIG", tp, f"{n}:4", st)),
        Step("register gets order kv", b.register(c, n, m, 0, [b.topic(tp, order=True)], DV1,
                                                  stype=st), conn=m),
        Step("route without orderMessageEnable", b.route(tp, st)),
        Step("enable order messages", b.cmd(RQ.UPDATE_NAMESRV_CONFIG,
                                            body=b"orderMessageEnable=true", stype=st),
             compare="code"),
        Step("route with order conf", b.route(tp, st)),
        Step("route v0 with order conf", b.route(tp, st, version=0)),
        Step("route without order entry", b.route(f"{p}none", st)),
        Step("order kv list", b.plain(RQ.GET_KVLIST_BY_NAMESPACE, st,
                                      namespace="ORDER_TOPIC_CONFIG")),
        Step("delete order conf", b.plain(RQ.DELETE_KV_CONFIG, st,
                                          namespace="ORDER_TOPIC_CONFIG", key=tp)),
        Step("register after delete", b.register(c, n, m, 0, [b.topic(tp)], DV2, stype=st),
             conn=m),
        Step("disable order messages", b.cmd(RQ.UPDATE_NAMESRV_CONFIG,
                                             body=b"orderMessageEnable=false", stype=st),
             compare="code"),
    ]


def oneway_and_close(p: str, st: SerializeType) -> list[Step]:
    c, n, m = f"{p}C", f"{p}b", _addr(p, 1)
    return [
        Step("oneway register", b.register(c, n, m, 0, [b.topic(f"{p}T"), b.topic(f"{p}T2")],
                                           DV1, stype=st, oneway=True), conn=m,
             settle=((b.cluster_info(), contains(m)),)),
        Step("route after oneway", b.route(f"{p}T", st)),
        Step("close the broker's connection", conn=m, close=True,
             settle=((b.cluster_info(), lacks(m)),)),
        *queries(p, st, [f"{p}T"]),
        Step("oneway unregister of nothing", b.unregister(c, n, m, 0, st, oneway=True)),
    ]


def several_brokers_one_connection(p: str, st: SerializeType) -> list[Step]:
    c, a1, a2 = f"{p}C", _addr(p, 1), _addr(p, 2)
    shared = f"{p}shared connection"
    gone_one = b.cluster_info()
    topics = [b.topic(f"{p}T"), b.topic(f"{p}T2")]
    return [
        Step("first broker", b.register(c, f"{p}b1", a1, 0, topics, DV1, stype=st), conn=shared),
        Step("second broker", b.register(c, f"{p}b2", a2, 0, topics, DV1, stype=st),
             conn=shared),
        Step("close the shared connection", conn=shared, close=True,
             settle=((gone_one, lambda r: lacks(a1)(r) or lacks(a2)(r)),)),
        Step("cluster info", b.cluster_info(st), deliberate=SEVERAL_BROKERS),
    ]


def bad_config_value(p: str, st: SerializeType) -> list[Step]:
    return [Step("config value that does not parse",
                 b.cmd(RQ.UPDATE_NAMESRV_CONFIG, body=b"serverChannelMaxIdleTimeSeconds=soon",
                       stype=st), compare="code", deliberate=BAD_CONFIG_VALUE),
            Step("config key unknown", b.cmd(RQ.UPDATE_NAMESRV_CONFIG, body=b"zzz=1", stype=st),
                 compare="code"),
            Step("config key blacklisted", b.cmd(RQ.UPDATE_NAMESRV_CONFIG,
                                                 body=b"kvConfigPath=/tmp/x", stype=st)),
            Step("config body not properties", b.cmd(RQ.UPDATE_NAMESRV_CONFIG,
                                                     body=b"\\u00zz=1", stype=st))]


def request_codes(p: str, st: SerializeType) -> list[Step]:
    """Every handled code without extFields, then codes 4.9 does not handle."""
    steps = [Step(f"code {int(code)} without extFields", b.cmd(code, stype=st))
             for code in sorted(b.RQ) if code not in _NO_BARE_CODES]
    steps += [Step(f"code {code} (not 4.9)", b.cmd(code, stype=st), may_not_reply=True)
              for code in (RQ.REGISTER_TOPIC_IN_NAMESRV, RQ.GET_BROKER_MEMBER_GROUP,
                           RQ.BROKER_HEARTBEAT, 9999)]
    steps.append(Step("a response frame is ignored", b.cmd(RQ.GET_BROKER_CLUSTER_INFO, stype=st),
                      may_not_reply=True))
    steps[-1].cmd.flag = 1  # type: ignore[union-attr]
    steps.append(Step("config", b.cmd(RQ.GET_NAMESRV_CONFIG, stype=st), compare="code"))
    steps.append(Step("empty config update", b.cmd(RQ.UPDATE_NAMESRV_CONFIG, stype=st)))
    return steps


# not sent bare: codes 4.9 does not handle (above), config (compared by code),
# the pynamesrv extension
_NO_BARE_CODES = frozenset({RQ.REGISTER_TOPIC_IN_NAMESRV, RQ.GET_BROKER_MEMBER_GROUP,
                            RQ.BROKER_HEARTBEAT, RQ.GET_NAMESRV_CONFIG,
                            RQ.UPDATE_NAMESRV_CONFIG, RQ.GET_NODE_SNAPSHOT, RQ.GET_NODE_DIGEST})


def ten_thousand_topics(p: str, st: SerializeType) -> list[Step]:
    c, n, m = f"{p}C", f"{p}b", _addr(p, 1)
    topics = [b.topic(f"{p}T{i:05d}", queues=1 + i % 8, sysflag=i % 4) for i in range(10_000)]
    return [
        Step("register 10,000 topics", b.register(c, n, m, 0, topics, DV1, stype=st), conn=m),
        Step("again, same version", b.register(c, n, m, 0, topics, DV1, stype=st), conn=m),
        Step("topics by cluster", b.plain(RQ.GET_TOPICS_BY_CLUSTER, st, cluster=c)),
        Step("all topics", b.plain(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, st)),
        Step("unit topics", b.plain(RQ.GET_UNIT_TOPIC_LIST, st)),
        Step("route first", b.route(f"{p}T00000", st)),
        Step("route last", b.route(f"{p}T09999", st, version=0)),
        unregister_step("unregister", c, n, m, 0, st),
        Step("all topics after", b.plain(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, st)),
    ]


SHARED: dict[str, Scenario] = {
    "kv": kv,
    "master_slave": master_slave,
    "slave_then_master_leave": slave_then_master_leave,
    "id_switch": id_switch,
    "two_clusters": two_clusters,
    "bodies_and_crc": bodies_and_crc,
    "unit_and_perm": unit_and_perm,
    "oneway_and_close": oneway_and_close,
    "request_codes": request_codes,
}
FRESH: dict[str, Scenario] = {
    "several_brokers_one_connection": several_brokers_one_connection,
    "bad_config_value": bad_config_value,
    "order_topics": order_topics,
    "ten_thousand_topics": ten_thousand_topics,
}
