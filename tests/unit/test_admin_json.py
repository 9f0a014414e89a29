"""topicRoute's JSON as mqadmin prints it, against what the real TopicRouteData printed.

Each expected text below was printed by ``TopicRouteData.toJson(true)`` of the release
after ``RemotingSerializable.decode`` of the reply body beside it (mqadmin 4.9.8's
fastjson 1.2.69 and 5.5.0's fastjson2), as ``topicRoute`` does; the real command's
output for a live cluster is compared in tests/integration/test_admin_verbs.py.
"""

from __future__ import annotations

import pytest

from cluster.client.admin_json import route_json, route_table
from cluster.core.protocol.lenient import loads_lenient

# brokerAddrs out of order, escapes, a filter table, an order conf, 5.x's extra fields
FULL = (b'{"brokerDatas":[{"brokerAddrs":{"1":"b:2","0":"a:1","17":"c:3"},'
        b'"brokerName":"bk\\"\\\\\\t\\u00e9\\u2028/x","cluster":"C","zoneName":"z1",'
        b'"enableActingMaster":true}],"filterServerTable":{"a:1":["f1","f2"],"b:2":[]},'
        b'"orderTopicConf":"bk:4;x:2","queueDatas":[{"brokerName":"bk","perm":6,'
        b'"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}')
EMPTY = b'{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]}'
# nulls, missing fields, control and other characters each library escapes its own way
ODD = ('{"brokerDatas": [{"brokerAddrs": {"0": "x:1", "1": null}, "brokerName": '
       '"a\\u0001b\\u001fc\x7fd\x85e\U0001F600f/g<h>&\'i\u00ff\u2029", "cluster": null}], '
       '"filterServerTable": null, "queueDatas": [{"brokerName": "q"}]}').encode()

EXPECTED = {
    ("FULL", "4.9"): (
        '{\n'
        '\t"brokerDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerAddrs":{0:"a:1",1:"b:2",17:"c:3"\n'
        '\t\t\t},\n'
        '\t\t\t"brokerName":"bk\\"\\\\\\té\\u2028/x",\n'
        '\t\t\t"cluster":"C"\n'
        '\t\t}\n'
        '\t],\n'
        '\t"filterServerTable":{\n'
        '\t\t"a:1":[\n'
        '\t\t\t"f1",\n'
        '\t\t\t"f2"\n'
        '\t\t],\n'
        '\t\t"b:2":[]\n'
        '\t},\n'
        '\t"orderTopicConf":"bk:4;x:2",\n'
        '\t"queueDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerName":"bk",\n'
        '\t\t\t"perm":6,\n'
        '\t\t\t"readQueueNums":8,\n'
        '\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":8\n'
        '\t\t}\n'
        '\t]\n'
        '}'),
    ("FULL", "5"): (
        '{\n'
        '\t"brokerDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerAddrs":{\n'
        '\t\t\t\t0:"a:1",\n'
        '\t\t\t\t1:"b:2",\n'
        '\t\t\t\t17:"c:3"\n'
        '\t\t\t},\n'
        '\t\t\t"brokerName":"bk\\"\\\\\\té\u2028/x",\n'
        '\t\t\t"cluster":"C",\n'
        '\t\t\t"enableActingMaster":true,\n'
        '\t\t\t"zoneName":"z1"\n'
        '\t\t}\n'
        '\t],\n'
        '\t"filterServerTable":{\n'
        '\t\t"a:1":[\n'
        '\t\t\t"f1",\n'
        '\t\t\t"f2"\n'
        '\t\t],\n'
        '\t\t"b:2":[]\n'
        '\t},\n'
        '\t"orderTopicConf":"bk:4;x:2",\n'
        '\t"queueDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerName":"bk",\n'
        '\t\t\t"perm":6,\n'
        '\t\t\t"readQueueNums":8,\n'
        '\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":8\n'
        '\t\t}\n'
        '\t]\n'
        '}'),
    ("EMPTY", "4.9"): (
        '{\n'
        '\t"brokerDatas":[],\n'
        '\t"filterServerTable":{},\n'
        '\t"queueDatas":[]\n'
        '}'),
    ("EMPTY", "5"): (
        '{\n'
        '\t"brokerDatas":[\n'
        '\t\t\n'
        '\t],\n'
        '\t"filterServerTable":{},\n'
        '\t"queueDatas":[\n'
        '\t\t\n'
        '\t]\n'
        '}'),
    ("ODD", "4.9"): (
        '{\n'
        '\t"brokerDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerAddrs":{0:"x:1"\n'
        '\t\t\t},\n'
        '\t\t\t"brokerName":"a\\u0001b\\u001Fc\\u007Fd\\u0085e😀f/g<h>&\'iÿ\\u2029"\n'
        '\t\t}\n'
        '\t],\n'
        '\t"queueDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerName":"q",\n'
        '\t\t\t"perm":0,\n'
        '\t\t\t"readQueueNums":0,\n'
        '\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":0\n'
        '\t\t}\n'
        '\t]\n'
        '}'),
    ("ODD", "5"): (
        '{\n'
        '\t"brokerDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerAddrs":{\n'
        '\t\t\t\t0:"x:1"\n'
        '\t\t\t},\n'
        '\t\t\t"brokerName":"a\\u0001b\\u001fc\x7fd\x85e😀f/g<h>&\'iÿ\u2029",\n'
        '\t\t\t"enableActingMaster":false\n'
        '\t\t}\n'
        '\t],\n'
        '\t"queueDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerName":"q",\n'
        '\t\t\t"perm":0,\n'
        '\t\t\t"readQueueNums":0,\n'
        '\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":0\n'
        '\t\t}\n'
        '\t]\n'
        '}'),
}


@pytest.mark.parametrize("name, release", sorted(EXPECTED))
def test_route_json_is_what_the_release_printed(name: str, release: str) -> None:
    body = {"FULL": FULL, "EMPTY": EMPTY, "ODD": ODD}[name]
    assert route_json(loads_lenient(body), release) == EXPECTED[name, release]


def test_route_table_as_mqadmin_printed_it() -> None:
    doc = {"brokerDatas": [
        {"brokerAddrs": {"0": "127.0.0.1:33911"}, "brokerName": "broker-four",
         "cluster": "OldCluster"},
        {"brokerAddrs": {"0": "127.0.0.1:32911"}, "brokerName": "broker-five",
         "cluster": "DefaultCluster"}],
        "queueDatas": [{"brokerName": n, "perm": 6, "readQueueNums": 4, "topicSysFlag": 0,
                        "writeQueueNums": 4} for n in ("broker-four", "broker-five")]}
    # mqadmin 5.5.0 printed these lines (each 158 wide) for such a route
    assert list(route_table(doc)) == [
        "#ClusterName" + " " * 34 + "#BrokerName" + " " * 22 + "#BrokerAddrs" + " " * 39
        + "#ReadQueue #WriteQueue #Perm",
        "DefaultCluster" + " " * 32 + "broker-five" + " " * 22 + "{0=127.0.0.1:32911}"
        + " " * 32 + "4          4           6    ",
        "OldCluster" + " " * 36 + "broker-four" + " " * 22 + "{0=127.0.0.1:33911}"
        + " " * 32 + "4          4           6    ",
        "-" * 158,
        "Total:" + " " * 40 + "2" + " " * 83 + "8          8" + " " * 16]


def test_route_table_stops_at_a_broker_without_queues() -> None:
    doc = {"brokerDatas": [{"brokerName": "b", "brokerAddrs": {}}], "queueDatas": []}
    lines = route_table(doc)
    assert next(lines).startswith("#ClusterName")
    with pytest.raises(KeyError):
        next(lines)
