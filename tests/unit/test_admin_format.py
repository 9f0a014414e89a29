"""The admin verbs' text in mqadmin 4.9.8's formats (its printf strings, checked by hand)."""

from __future__ import annotations

from cluster.client import admin_format as fmt

INFO = {
    "clusterAddrTable": {"B-Cluster": ["broker-z"], "A-Cluster": ["broker-b", "broker-a"]},
    "brokerAddrTable": {
        "broker-a": {"brokerAddrs": {1: "127.0.0.1:10931", 0: "127.0.0.1:10911"}},
        "broker-b": {"brokerAddrs": {0: "127.0.0.1:10921"}},
        "broker-z": {"brokerAddrs": {0: "127.0.0.1:10941"}},
    },
}
STATS = {"brokerVersionDesc": "V4_9_8", "putTps": "12.5 10.0 9.0", "getTransferedTps": "3.25",
         "sendThreadPoolQueueSize": "0", "sendThreadPoolQueueHeadWaitTimeMills": "1",
         "pullThreadPoolQueueSize": "2", "pullThreadPoolQueueHeadWaitTimeMills": "0",
         "pageCacheLockTimeMills": "0", "earliestMessageTimeStamp": "1000",
         "commitLogDiskRatio": "0.5123456",
         "msgPutTotalYesterdayMorning": "10", "msgPutTotalTodayMorning": "25",
         "msgPutTotalTodayNow": "40", "msgGetTotalYesterdayMorning": "1",
         "msgGetTotalTodayMorning": "3", "msgGetTotalTodayNow": "4"}


def test_perm_lines_match_mqadmin() -> None:
    assert fmt.perm_line("wipe", "broker-a", "127.0.0.1:9876", 3) == \
        "wipe write perm of broker[broker-a] in name server[127.0.0.1:9876] OK, 3"
    assert fmt.perm_line("add", "broker-a", "h:1", None) == \
        "add write perm of broker[broker-a] in name server[h:1] Failed"


def test_cluster_list_header_is_mqadmins_printf() -> None:
    # String.format("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s", ...)
    head = fmt.cluster_list_lines({}, {})[0]
    assert head == ("#Cluster Name     #Broker Name            #BID  #Addr                  "
                    "#Version                #InTPS(LOAD)       #OutTPS(LOAD) #PCWait(ms) "
                    "#Hour #SPACE")


def test_cluster_list_rows_sorted_with_stats_and_without() -> None:
    lines = fmt.cluster_list_lines(INFO, {"127.0.0.1:10911": STATS}, now_ms=1000 + 7_200_000)
    assert [ln.split()[:4] for ln in lines[1:]] == [
        ["A-Cluster", "broker-a", "0", "127.0.0.1:10911"],
        ["A-Cluster", "broker-a", "1", "127.0.0.1:10931"],
        ["A-Cluster", "broker-b", "0", "127.0.0.1:10921"],
        ["B-Cluster", "broker-z", "0", "127.0.0.1:10941"]]
    java = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s"  # printClusterBaseInfo
    assert lines[1] == java % ("A-Cluster", "broker-a", 0, "127.0.0.1:10911", "V4_9_8",
                               "%9.2f(%s,%sms)" % (12.5, "0", "1"),  # noqa: UP031
                               "%9.2f(%s,%sms)" % (3.25, "2", "0"),  # noqa: UP031
                               "0", "2.00", "0.5123")
    # an unreachable broker: empty columns, as mqadmin prints them
    assert lines[2].endswith("      0.00(,ms)           0.00(,ms)             0.00 0.0000")


def test_more_stats_layout() -> None:
    lines = fmt.cluster_list_lines(INFO, {"127.0.0.1:10911": STATS}, more=True)
    assert lines[0] == ("#Cluster Name     #Broker Name                       #InTotalYest  "
                        "#OutTotalYest  #InTotalToday #OutTotalToday")
    assert lines[1].split() == ["A-Cluster", "broker-a", "15", "2", "15", "1"]
    assert lines[3].split() == ["A-Cluster", "broker-b", "0", "0", "0", "0"]


def test_config_and_member_group_sections() -> None:
    assert fmt.config_lines("h:1", {"b": "2", "a": "1"}) == [
        "============h:1============", f"{'a':<50}=  1", f"{'b':<50}=  2"]
    assert fmt.member_group_lines("C", "broker-a", {1: "h:2", 0: "h:1"}) == [
        "#Cluster Name     #Broker Name            #BID  #Addr",
        "C                 broker-a                0     h:1",
        "C                 broker-a                1     h:2"]


def test_topic_clusters_and_delete_lines() -> None:
    route = {"brokerDatas": [{"brokerName": "broker-b"}, {"brokerName": "broker-z"}]}
    assert fmt.topic_clusters(route, INFO) == ["A-Cluster", "B-Cluster"]
    assert fmt.topic_clusters({"brokerDatas": []}, INFO) == []
    assert fmt.delete_topic_done("T") == "delete topic [T] from NameServer success."
    assert fmt.java_list(["a:1", "b:2"]) == "[a:1, b:2]"
