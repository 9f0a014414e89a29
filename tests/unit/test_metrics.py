"""Worker counters, snapshots and the controller's sums: monotonic across restarts."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cluster.core.protocol.codes import FLAG_ONEWAY, SerializeType
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.frame import encode_command
from worker import wire
from worker.controller.metrics_book import MetricsBook
from worker.controller.metrics_server import NodeCollector, cumulative_buckets
from worker.metrics import (
    LATENCY_BOUNDS,
    MAX_CODES,
    OTHER,
    Histogram,
    WorkerMetrics,
    frame_code,
    origin_of,
    parse_snapshot,
    reply_code,
)


def snap(kind: str, index: int, pid: int, requests: int, latencies: tuple[float, ...] = (),
         hits: int = 0) -> dict:
    m = WorkerMetrics(kind, index, pid)
    m.request(105, 0, requests)
    for s in latencies:
        m.observe(105, s)
    m.add("route_template_hits", hits)
    doc = parse_snapshot(m.snapshot())
    assert doc is not None
    return doc


def scrape(book: MetricsBook, restarts: dict[str, int] | None = None) -> dict[str, float]:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(NodeCollector(book, lambda: None, dict, lambda: restarts or {}))
    text = generate_latest(reg).decode()
    return {s.name + str(sorted(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


REQ = "pynamesrv_requests_total[('code', '105'), ('origin', 'client'), ('result', '0')]"
HITS = "pynamesrv_route_template_hits_total[]"


def test_sums_live_workers() -> None:
    book = MetricsBook()
    book.update(snap("io", 0, 10, 3, hits=2))
    book.update(snap("business", 0, 11, 4))
    out = scrape(book)
    assert out[REQ] == 7 and out[HITS] == 2


def test_retired_worker_keeps_its_totals() -> None:
    book = MetricsBook()
    book.update(snap("io", 0, 10, 5, hits=5))
    book.retire("io", 0, 10)
    assert scrape(book)[REQ] == 5
    book.update(snap("io", 0, 20, 1, hits=1))  # the restarted worker counts from zero
    out = scrape(book)
    assert out[REQ] == 6 and out[HITS] == 6


def test_new_pid_without_retire_keeps_old_totals() -> None:
    book = MetricsBook()
    book.update(snap("business", 1, 10, 8))
    book.update(snap("business", 1, 30, 2))
    assert scrape(book)[REQ] == 10


def test_retire_of_another_pid_changes_nothing() -> None:
    book = MetricsBook()
    book.update(snap("io", 0, 10, 5))
    book.retire("io", 0, 99)
    book.update(snap("io", 0, 10, 7))  # same process, later totals: replaces, not adds
    assert scrape(book)[REQ] == 7


def test_histogram_buckets_are_cumulative_across_restart() -> None:
    book = MetricsBook()
    book.update(snap("io", 0, 10, 0, latencies=(0.00005, 0.001, 0.3)))
    book.retire("io", 0, 10)
    book.update(snap("io", 0, 11, 0, latencies=(0.001, 100.0)))
    out = scrape(book)
    name = "pynamesrv_request_latency_seconds_bucket[('code', '105'), ('le', '{}')]"
    assert out[name.format("0.0001")] == 1
    assert out[name.format("0.001")] == 3  # a value equal to a bound is in that bucket
    assert out[name.format("0.25")] == 3
    assert out[name.format("0.5")] == 4
    assert out[name.format("+Inf")] == 5
    values = [out[name.format(b)] for b in (*map(str, LATENCY_BOUNDS), "+Inf")]
    assert values == sorted(values)
    assert out["pynamesrv_request_latency_seconds_count[('code', '105')]"] == 5
    assert abs(out["pynamesrv_request_latency_seconds_sum[('code', '105')]"] - 100.30205) < 1e-9


def test_cumulative_buckets() -> None:
    h = Histogram()
    for s in (0.0, 0.0002, 0.0002, 10.0):
        h.observe(s)
    buckets = cumulative_buckets(h.counts)
    assert buckets[0] == ("0.0001", 1) and buckets[1] == ("0.00025", 3)
    assert buckets[-1] == ("+Inf", 4) and buckets[-2] == ("5.0", 3)


def test_restarts_and_queue_gauges() -> None:
    book = MetricsBook()
    m = WorkerMetrics("io", 2, 10)
    m.gauges = {"queue_reads": 3, "queue_others": 4, "connections": 5}
    book.update(parse_snapshot(m.snapshot()) or {})
    out = scrape(book, {"business": 2, "io": 0})
    assert out["pynamesrv_business_queue_depth[('io_worker', '2'), ('lane', 'others')]"] == 4
    assert out["pynamesrv_business_queue_depth[('io_worker', '2'), ('lane', 'reads')]"] == 3
    assert out["pynamesrv_connections_open[]"] == 5
    assert out["pynamesrv_worker_restarts_total[('kind', 'business')]"] == 2


def test_codes_beyond_the_cap_count_as_other() -> None:
    m = WorkerMetrics("business", 0, 1)
    for code in range(MAX_CODES + 5):
        m.request(code, 0)
        m.observe(code, 0.001)
    assert len(m.requests) == MAX_CODES + 1 and m.requests[(OTHER, 0, "client")] == 5
    assert len(m.latency) == MAX_CODES + 1 and sum(m.latency[OTHER].counts) == 5


def test_codes_read_from_frames_and_replies() -> None:
    for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
        cmd = RemotingCommand(code=105, opaque=7, serialize_type=stype,
                              ext_fields={"topic": "T", "code": "9"})
        frame = encode_command(cmd)[4:]  # frames reach the hub without their length word
        assert frame_code(frame) == 105
        reply = response_to(cmd, 17, "no route")
        reply.serialize_type = stype
        assert reply_code(encode_command(reply)) == 17
    assert frame_code(b"\x00\x00") == OTHER
    oneway = RemotingCommand(code=100, flag=FLAG_ONEWAY)
    assert frame_code(encode_command(oneway)[4:]) == 100


def test_snapshot_is_one_frame_of_its_kind() -> None:
    msg = WorkerMetrics("io", 0, 5).snapshot()
    assert msg[:1] == wire.METRICS
    assert parse_snapshot(b"ready io 0 5") is None
    assert parse_snapshot(wire.METRICS + b"not json") is None


def test_monitoring_requests_are_counted_apart_and_the_build_is_named() -> None:
    def cmd(ext: dict[str, str] | None) -> RemotingCommand:
        return RemotingCommand(code=319, opaque=1, ext_fields=ext)

    assert origin_of(cmd(None)) == "client"
    assert origin_of(cmd({"pynamesrvOrigin": "probe"})) == "probe"
    assert origin_of(cmd({"pynamesrvOrigin": "status"})) == "status"
    assert origin_of(cmd({"pynamesrvOrigin": "anything-else"})) == "client"
    m = WorkerMetrics("business", 0, 11)
    m.request(319, 0, 5, origin="probe")
    m.request(319, 0, 2)
    book = MetricsBook()
    doc = parse_snapshot(m.snapshot())
    assert doc is not None
    book.update(doc)
    out = scrape(book)
    key = "pynamesrv_requests_total[('code', '319'), ('origin', '{}'), ('result', '0')]"
    assert (out[key.format("probe")], out[key.format("client")]) == (5, 2)
    build = [k for k in out if k.startswith("pynamesrv_build_info[")]
    assert len(build) == 1 and "('rocketmq', '4.9.8')" in build[0] and out[build[0]] == 1
