"""The admin verbs' text and orders as mqadmin prints them.

Orders marked "Java printed" were printed by Java 17 for the same input (the
collections mqadmin decodes into); the lines are mqadmin's printf strings.
"""

from __future__ import annotations

import pytest

from cluster.client import admin_format as fmt
from cluster.client import java_text as jt

INFO = {
    "clusterAddrTable": {"C": ["broker-b", "broker-a"], "Other": ["broker-z"]},
    "brokerAddrTable": {
        "broker-a": {"brokerAddrs": {1: "127.0.0.1:10931", 0: "127.0.0.1:10911"}},
        "broker-b": {"brokerAddrs": {0: "127.0.0.1:10921"}},
        "broker-z": {"brokerAddrs": {1: "127.0.0.1:10951"}},
    },
}


def test_perm_lines_match_mqadmin() -> None:
    assert fmt.perm_line("wipe", "broker-a", "127.0.0.1:9876", 3) == \
        "wipe write perm of broker[broker-a] in name server[127.0.0.1:9876] OK, 3"
    assert fmt.perm_line("add", "broker-a", "h:1", None) == \
        "add write perm of broker[broker-a] in name server[h:1] Failed"


def test_config_nodes_in_the_order_of_mqadmins_hashmap() -> None:
    # Java printed: a HashMap(4) of these five addresses, put in this order
    addrs = ["127.0.0.1:31877", "127.0.0.1:31876", "127.0.0.1:9876", "127.0.0.1:10911",
             "127.0.0.1:40000"]
    assert fmt.config_order(addrs) == ["127.0.0.1:10911", "127.0.0.1:40000",
                                       "127.0.0.1:31877", "127.0.0.1:9876", "127.0.0.1:31876"]
    assert fmt.config_order(addrs[:2]) == ["127.0.0.1:31877", "127.0.0.1:31876"]


# Java 17 printed a Properties loaded from keyN=vN lines in PUT order in ITERATED order.
PUT = [32, 42, 12, 19, 18, 37, 31, 49, 25, 44, 2, 30, 15, 41, 26, 11, 23, 33, 5, 14, 21, 16,
       3, 24, 43, 28, 47, 34, 40, 0, 29, 1, 9, 48, 36, 39, 8, 27, 20, 35, 13, 17, 10, 7, 4, 38,
       46, 45, 6, 22]
ITERATED = [1, 2, 0, 5, 6, 3, 4, 40, 9, 7, 8, 44, 43, 42, 41, 37, 36, 35, 34, 39, 38, 11, 10,
            48, 47, 46, 45, 49, 22, 21, 20, 15, 14, 13, 12, 19, 18, 17, 16, 33, 32, 31, 30, 26,
            25, 24, 23, 29, 28, 27]


def test_config_lines_in_the_order_of_a_properties() -> None:
    reply = {f"key{i}": f"v{i}" for i in PUT}
    lines = fmt.config_lines("h:1", reply)
    assert lines[0] == "============h:1============"
    assert lines[1:] == [f"{'key' + str(i):<50}=  v{i}" for i in ITERATED]


def test_topic_list_in_the_order_of_mqadmins_hashset() -> None:
    # Java printed: a HashSet of these names, added in this order
    assert fmt.topic_list(["DefaultCluster", "OldCluster", "c", "a", "B", "a"]) == \
        ["a", "OldCluster", "B", "c", "DefaultCluster"]


def test_update_namesrv_config_lines() -> None:
    assert fmt.update_namesrv_config_done(" a:1;b:2 ", "k", "v") == [
        "update name server config success![a:1, b:2]", "k : v"]
    assert fmt.update_namesrv_config_done(None, "k", "v") == [
        "update name server config success!", "k : v"]


def test_topic_clusters_of_the_first_broker() -> None:
    info = {"clusterAddrTable": {"C": ["b"], "B": ["b"], "Z": ["z"]}}
    route = {"brokerDatas": [{"brokerName": "b"}, {"brokerName": "z"}]}
    assert fmt.topic_clusters(route, info) == ["B", "C"]
    assert fmt.topic_clusters({"brokerDatas": []}, info) == []


def test_delete_topic_masters_and_lines() -> None:
    assert sorted(fmt.cluster_masters(INFO, "C") or []) == ["127.0.0.1:10911",
                                                            "127.0.0.1:10921"]
    assert fmt.cluster_masters(INFO, "Other") == []
    assert fmt.cluster_masters(INFO, "nope") is None
    assert fmt.delete_topic_brokers_done("T", "C") == \
        "delete topic [T] from cluster [C] success."
    assert fmt.delete_topic_done("T") == "delete topic [T] from NameServer success."
    assert not fmt.NO_CLUSTER.endswith("\n")


def test_member_group_sections() -> None:
    assert fmt.member_group_lines("C", "broker-a", {1: "h:2", 0: "h:1"}) == [
        "#Cluster Name     #Broker Name            #BID  #Addr",
        "C                 broker-a                0     h:1",
        "C                 broker-a                1     h:2"]


# ------------------------------------------------------------- java_text

@pytest.mark.parametrize("x, digits, java", [
    # Java 17 printed these with String.format("%.<digits>f", x)
    (0.125, 2, "0.13"), (0.15, 1, "0.2"), (2.675, 2, "2.68"), (1.005, 2, "1.01"),
    (0.045, 1, "0.0"), (498817.705, 2, "498817.71"), (1e-7, 2, "0.00"), (-0.0, 2, "-0.00"),
    (12345678.125, 2, "12345678.13"), (2.5, 4, "2.5000"), (float("nan"), 2, "NaN"),
    (float("inf"), 4, "Infinity"), (jt.as_float32(0.35), 1, "0.3"),
])
def test_fixed_rounds_as_java_formatter(x: float, digits: int, java: str) -> None:
    assert jt.fixed(x, digits) == java


@pytest.mark.parametrize("text, value", [
    ("12.5", 12.5), (" 3 ", 3.0), ("1e3", 1000.0), ("2.5f", 2.5), (".5", 0.5),
    ("-Infinity", float("-inf")),
])
def test_parse_double_accepts_what_java_accepts(text: str, value: float) -> None:
    assert jt.parse_double(text) == value


@pytest.mark.parametrize("text", [None, "", "1_0", "inf", "nan", "0x", "1.0.0", "abc"])
def test_parse_double_refuses_what_java_refuses(text: str | None) -> None:
    with pytest.raises(ValueError):
        jt.parse_double(text)


def test_parse_long_and_java_strings() -> None:
    assert jt.parse_long("-12") == -12
    for bad in (None, "", "1.0", " 1", str(1 << 63)):
        with pytest.raises(ValueError):
            jt.parse_long(bad)
    assert (jt.jstr(None), jt.jstr(True), jt.jstr(3)) == ("null", "true", "3")
    assert jt.list_str(["a:1", "b:2"]) == "[a:1, b:2]"
    assert jt.map_str([(0, "h:1"), (1, None)]) == "{0=h:1, 1=null}"
