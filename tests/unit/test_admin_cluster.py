"""clusterList in mqadmin's layouts, against lines the real mqadmin 4.9.8 and 5.5.0 printed.

The expected rows below were printed by the real mqadmin for a cluster of a 4.9.7 and a
5.5.0 broker (``STATS_4`` and ``STATS_5`` are those brokers' runtime tables, cut to
the keys mqadmin reads); ``NOW`` is the moment that gives the hours it printed.
"""

from __future__ import annotations

from cluster.client import admin_cluster as ac

INFO = {
    "brokerAddrTable": {
        "broker-four": {"brokerAddrs": {0: "127.0.0.1:33911"}},
        "broker-five": {"brokerAddrs": {0: "127.0.0.1:32911"}},
    },
    # the reply's order; mqadmin's HashMap puts OldCluster first
    "clusterAddrTable": {"DefaultCluster": ["broker-five"], "OldCluster": ["broker-four"]},
}
COMMON = {"commitLogDiskRatio": "0.22", "earliestMessageTimeStamp": "-1",
          "msgGetTotalTodayMorning": "0", "msgGetTotalTodayNow": "0",
          "msgGetTotalYesterdayMorning": "0", "msgPutTotalTodayMorning": "0",
          "msgPutTotalTodayNow": "0", "msgPutTotalYesterdayMorning": "0",
          "pageCacheLockTimeMills": "0", "pullThreadPoolQueueHeadWaitTimeMills": "0",
          "pullThreadPoolQueueSize": "0", "putTps": "0.0 0.0 0.0",
          "sendThreadPoolQueueHeadWaitTimeMills": "0", "sendThreadPoolQueueSize": "0"}
STATS_4 = {**COMMON, "brokerVersionDesc": "V4_9_7", "getTransferedTps": "0.0 0.0 0.0"}
STATS_5 = {**COMMON, "brokerVersionDesc": "V5_5_0", "getTransferredTps": "0.0 0.0 0.0",
           "ackThreadPoolQueueHeadWaitTimeMills": "0", "ackThreadPoolQueueSize": "0",
           "brokerActive": "true", "timerCongestNum": "0", "timerDequeueTps": "0.0",
           "timerEnqueueTps": "0.0", "timerOffsetBehind": "0", "timerReadBehind": "0"}
STATS = {"127.0.0.1:33911": STATS_4, "127.0.0.1:32911": STATS_5}
NOW = 1_795_743_756_000  # (NOW + 1) ms since the epoch = 498817.71 h


def test_4_9_table_as_mqadmin_4_9_8_printed_it() -> None:
    assert ac.lines(INFO, STATS, "4.9", now_ms=NOW) == [
        "#Cluster Name     #Broker Name            #BID  #Addr                  #Version      "
        "          #InTPS(LOAD)       #OutTPS(LOAD) #PCWait(ms) #Hour #SPACE",
        "OldCluster        broker-four             0     127.0.0.1:33911        V4_9_7        "
        "           0.00(0,0ms)         0.00(0,0ms)          0 498817.71 0.2200",
        "DefaultCluster    broker-five             0     127.0.0.1:32911        V5_5_0        "
        "           0.00(0,0ms)         0.00(0,0ms)          0 498817.71 0.2200"]


def test_5_table_as_mqadmin_5_5_0_printed_it() -> None:
    assert ac.lines(INFO, STATS, "5", now_ms=NOW) == [
        "#Cluster Name           #Broker Name            #BID  #Addr                  #Version"
        "              #InTPS(LOAD)                   #OutTPS(LOAD)  #Timer(Progress)        "
        "#PCWait(ms)  #Hour         #SPACE    #ACTIVATED",
        "OldCluster              broker-four             0     127.0.0.1:33911        V4_9_7  "
        "               0.00(0,0ms)               0.00(0,0ms|N,Nms)  0-0(0.0w, 0.0, 0.0)     "
        "          0  498817.71     0.2200         false",
        "DefaultCluster          broker-five             0     127.0.0.1:32911        V5_5_0  "
        "               0.00(0,0ms)               0.00(0,0ms|0,0ms)  0-0(0.0w, 0.0, 0.0)     "
        "          0  498817.71     0.2200          true"]


def test_more_stats_as_mqadmin_printed_them() -> None:
    assert ac.lines(INFO, STATS, "5", more=True) == [
        "#Cluster Name     #Broker Name                       #InTotalYest  #OutTotalYest  "
        "#InTotalToday #OutTotalToday",
        "OldCluster        broker-four                                   0              0    "
        "          0              0",
        "DefaultCluster    broker-five                                   0              0    "
        "          0              0"]
    busy = {**STATS_5, "msgPutTotalYesterdayMorning": "10", "msgPutTotalTodayMorning": "25",
            "msgPutTotalTodayNow": "40", "msgGetTotalTodayMorning": "x"}
    # a count Java cannot parse stops the sums there: the first is kept, the rest stay 0
    assert ac.more_line(("C", "b", 0, "h:1"), busy).split() == ["C", "b", "15", "0", "0", "0"]


def test_rows_follow_java_collections() -> None:
    info = {"clusterAddrTable": {"C": ["b-z", "b-a", "B"]},
            "brokerAddrTable": {"b-a": {"brokerAddrs": {"3": "h:3", "16": "h:16", "0": "h:0"}},
                                "b-z": {"brokerAddrs": {"0": "z:0"}},
                                "B": {"brokerAddrs": {}}}}
    # names sorted as a TreeSet; ids in HashMap order (16 shares 0's bucket: reply order)
    assert [(r[1], r[2]) for r in ac.rows(info)] == [("b-a", 16), ("b-a", 0), ("b-a", 3),
                                                     ("b-z", 0)]
    assert list(ac.rows(info, only="nope")) == []


def test_an_unreachable_broker_has_empty_columns_and_a_missing_key_prints_null() -> None:
    row = ("C", "b", 0, "h:1")
    assert ac.line_4(row, None, NOW).endswith(
        "h:1" + " " * 47 + "0.00(,ms)" + " " * 11 + "0.00(,ms)" + " " * 13 + "0.00 0.0000")
    assert ac.line_5(row, None, NOW).endswith(
        "h:1" + " " * 45 + "0.00(,ms)" + " " * 19 + "0.00(,ms|,ms)  0-0(0.0w, 0.0, 0.0)"
        + " " * 18 + "0.00" + " " * 10 + "0.0000" + " " * 9 + "false")
    four = ac.line_4(row, {"putTps": "2.5"}, NOW)
    assert "null" in four and "     2.50(null,nullms)" in four


def test_numbers_are_read_and_rounded_as_java_does() -> None:
    row = ("C", "b", 0, "h:1")
    s = {**STATS_5, "putTps": "0.125 1 1", "getTransferredTps": "bad", "timerReadBehind": "7",
         "timerOffsetBehind": "x", "timerCongestNum": "25000"}
    line = ac.line_5(row, s, NOW)
    # half-up on the decimal form (Java), not half-even on the binary value (Python)
    assert "     0.13(0,0ms)" in line
    # a TPS Java cannot parse ends the TPS values; a bad timer value leaves the rest 0
    assert "     0.00(0,0ms|0,0ms)" in line and "7-0(0.0w, 0.0, 0.0)" in line
    assert "2.5w" in ac.line_5(row, {**STATS_5, "timerCongestNum": "25000"}, NOW)
