"""The I/O worker's dispatcher: lanes, credit windows, failure and stale replies."""

from __future__ import annotations

import dataclasses

from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import decode_command, encode_command
from worker.io.dispatch import KEEP_WHOLE_BYTES, Dispatcher
from worker.wire import LANE_ALL, LANE_READ


def frame(code: int, stype: SerializeType = SerializeType.JSON) -> bytes:
    cmd = RemotingCommand(code=code, version=409, ext_fields={"topic": "T"}, serialize_type=stype)
    return encode_command(cmd)[4:]


def make(window: int = 4, max_pending: int = 100, cost_window: int = 10**9,
         write_window: int = 10**9) -> Dispatcher:
    return Dispatcher(window, max_pending, stopped_after=3.0, hung_after=30.0, forget_after=600.0,
                      cost_window=cost_window, write_window=write_window)


def stopped(_pid: int) -> bool:
    return True


def running(_pid: int) -> bool:
    return False


def test_a_full_queue_refuses_the_newest_request_of_the_busiest_connection() -> None:
    d = make(max_pending=3)
    for _ in range(2):
        assert d.submit(b"hog", frame(206), address="10.0.0.1") is None
    assert d.submit(b"calm", frame(101), address="10.0.0.2") is None
    mine = frame(206)
    refused = d.submit(b"hog", mine, "t", address="10.0.0.1")
    assert refused == (b"hog", mine, "t", 206)  # the busiest connection's own request
    assert d.submit(b"calm", frame(101), address="10.0.0.2") is not None  # room made ...
    assert sorted(c for c, _, _, _ in d.queued()) == [b"calm", b"calm", b"hog"]  # ... by hog


def test_writes_never_go_to_read_only_workers() -> None:
    d = make()
    d.seen(b"r", 0.0, LANE_READ)
    for _ in range(3):
        d.submit(b"c", frame(103))
    assert d.batches() == []
    d.seen(b"w", 0.0, LANE_ALL)
    [(peer, batch)] = d.batches()
    assert peer.ident == b"w" and len(batch) == 3


def test_reads_prefer_workers_without_writes_in_flight() -> None:
    d = make()
    d.seen(b"w", 0.0, LANE_ALL)
    d.seen(b"r", 0.0, LANE_READ)
    d.submit(b"c", frame(103))
    d.submit(b"c", frame(105))
    assigned = {peer.ident: len(batch) for peer, batch in d.batches()}
    assert assigned == {b"w": 1, b"r": 1}


def test_window_bounds_inflight_and_replies_free_credit() -> None:
    d = make(window=2)
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    for _ in range(5):
        d.submit(b"c", frame(105))
    assert [len(b) for _, b in d.batches()] == [2]
    assert d.batches() == []
    assert d.completed(peer)
    assert [len(b) for _, b in d.batches()] == [1]


def test_silent_worker_fails_its_inflight_and_late_replies_are_dropped() -> None:
    d = make()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    d.submit(b"c1", frame(105))
    d.submit(b"c2", frame(103))
    d.batches()
    silent, alive = d.expire(now=3.5, stopped=stopped)
    assert silent == [peer] and alive == []
    assert sorted(conn for conn, _ in d.fail(peer)) == [b"c1", b"c2"]
    _, back = d.seen(b"w", 4.0)
    assert back
    assert not d.completed(peer) and not d.completed(peer)  # the two stale replies
    assert d.completed(peer)  # a fresh one
    assert d.idle()


def test_a_large_request_in_flight_is_kept_without_its_body() -> None:
    d = make()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    big = RemotingCommand(code=103, opaque=7, version=409, ext_fields={"brokerName": "b"},
                          body=b"x" * (KEEP_WHOLE_BYTES + 1))
    small = RemotingCommand(code=103, opaque=8, version=409, body=b"y" * 100)
    for cmd in (big, small):
        d.submit(b"c", encode_command(cmd)[4:], tag=cmd.opaque)
    [(_, sent)] = d.batches()
    assert [len(f) for _, f in sent] == [len(encode_command(c)) - 4 for c in (big, small)]
    kept = [decode_command(f) for _, f in d.fail(peer)]
    assert kept == [dataclasses.replace(big, body=None), small]
    d.seen(b"w", 1.0)
    assert d.finish(peer)[0] is False and d.finish(peer)[0] is False  # stale replies
    d.submit(b"c", encode_command(big)[4:], tag=big.opaque)
    d.batches()
    assert d.finish(peer) == (True, 7, len(encode_command(big)) - 4)


def test_long_dead_workers_are_forgotten() -> None:
    d = make()
    d.seen(b"w", 0.0)
    d.expire(now=601.0, stopped=stopped)
    assert d.peers == {}


def test_a_running_worker_is_slow_not_lost_until_it_hangs() -> None:
    d = make()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL, pid=42)
    d.submit(b"c1", frame(103))
    d.batches()
    for now in (3.5, 10.0, 29.9):  # busy or starved of CPU: late, but not lost
        silent, greet = d.expire(now, stopped=running)
        assert silent == [] and greet == [peer]
    silent, greet = d.expire(30.1, stopped=running)
    assert silent == [peer] and greet == []


def test_only_silent_workers_are_asked_about_their_process() -> None:
    d = make()
    d.seen(b"w", 0.0, LANE_ALL, pid=42)
    asked: list[int] = []

    def probe(pid: int) -> bool:
        asked.append(pid)
        return False

    d.expire(2.9, stopped=probe)
    assert asked == []
    d.expire(3.1, stopped=probe)
    assert asked == [42]


def test_a_stopped_worker_is_bypassed_and_comes_back() -> None:
    d = make()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL, pid=42)
    d.submit(b"c1", frame(105))
    d.batches()
    assert d.expire(2.0, stopped=stopped) == ([], [peer])
    assert d.expire(3.5, stopped=stopped) == ([peer], [])
    assert [conn for conn, _ in d.fail(peer)] == [b"c1"]
    assert d.expire(4.0, stopped=stopped) == ([], [])  # failed once, not again
    _, back = d.seen(b"w", 5.0)
    assert back and not d.completed(peer) and d.idle()


def test_an_exited_worker_is_dropped_and_its_late_messages_ignored() -> None:
    d = make()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL, pid=42)
    d.submit(b"c1", frame(103))
    d.batches()
    assert [conn for conn, _ in d.drop(peer, now=1.0)] == [b"c1"]
    assert d.seen(b"w", 1.1) == (None, False)  # a reply queued before it died
    assert d.submit(b"c2", frame(103)) is None and d.batches() == []
    d.expire(1.0 + 601, stopped=running)
    assert b"w" not in d.peers


def test_a_closed_connection_loses_only_its_queued_requests() -> None:
    d = make(window=1)
    d.seen(b"w", 0.0, LANE_ALL)
    for conn in (b"a", b"b", b"a", b"b"):
        d.submit(conn, frame(103))
        d.submit(conn, frame(105))
    [(_, first)] = d.batches()  # one in flight, the rest queued
    assert d.discard(b"a") == 4 - sum(1 for c, _ in first if c == b"a")
    assert {c for c, _, _, _ in d.queued()} == {b"b"}


class Owner:
    """Frames of one buffer are owned; what is released is recorded."""

    def __init__(self) -> None:
        self.buf = bytearray(1 << 20)
        self.released: list[int] = []

    def frame(self, at: int, body: bytes) -> memoryview:
        view = memoryview(self.buf)[at : at + len(body)]
        view[:] = body
        return view

    def owns(self, frame: object) -> bool:
        return type(frame) is memoryview and frame.obj is self.buf

    def release(self, frame: memoryview) -> None:
        self.released.append(len(frame))


def owned(window: int = 4) -> tuple[Dispatcher, Owner]:
    owner = Owner()
    return Dispatcher(window, 100, stopped_after=3.0, hung_after=30.0, forget_after=600.0,
                      owner=owner, cost_window=10**9), owner


def big(owner: Owner, at: int) -> memoryview:
    return owner.frame(at, frame(103) + b"x" * (KEEP_WHOLE_BYTES + 1))


def test_an_owned_frame_in_flight_is_kept_whole_and_released_with_its_reply() -> None:
    d, owner = owned()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    assert peer is not None
    d.submit(b"c", big(owner, 0), "t1", code=103)
    d.submit(b"c", frame(103), "t2")
    d.batches()
    assert peer.inflight[0][1] is not None and len(peer.inflight[0][1]) > KEEP_WHOLE_BYTES
    assert d.finish(peer)[1] == "t1" and len(owner.released) == 1
    assert d.finish(peer)[1] == "t2" and len(owner.released) == 1  # bytes own nothing


def test_an_owned_frame_of_a_failed_worker_waits_for_its_stale_reply() -> None:
    d, owner = owned()
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    assert peer is not None
    d.submit(b"c", frame(103))
    d.submit(b"c", big(owner, 0), code=103)
    d.batches()
    lost = d.fail(peer)
    assert len(lost) == 2 and owner.released == []  # still readable: the caller answers it
    assert len(lost[1][1]) > KEEP_WHOLE_BYTES  # the whole frame, not just its header
    d.seen(b"w", 1.0, LANE_ALL)  # it was slow, not dead: its replies come
    assert d.finish(peer) == (False, None, 0) and owner.released == []
    assert d.finish(peer) == (False, None, 0) and len(owner.released) == 1


def test_owned_frames_are_released_when_their_worker_exits_never_while_it_may_read() -> None:
    d, owner = owned()
    for ident in (b"a", b"b"):
        d.seen(ident, 0.0, LANE_ALL)
        d.submit(b"c", big(owner, 0), code=103)
        d.batches()
    a, b = d.peers[b"a"], d.peers[b"b"]
    d.drop(a, 1.0)
    assert len(owner.released) == 1
    d.fail(b)
    assert len(owner.released) == 1
    d.expire(601.0, running)  # failed long ago and silent since: forgotten ...
    assert b"b" not in d.peers and len(owner.released) == 1  # ... but it may still wake


def test_queued_owned_frames_of_a_closed_connection_are_released() -> None:
    d, owner = owned()
    d.submit(b"gone", big(owner, 0), code=103)
    d.submit(b"kept", big(owner, 4096), code=103)
    assert d.discard(b"gone") == 1 and len(owner.released) == 1
    assert [conn for conn, _, _, _ in d.queued()] == [b"kept"]


def test_a_worker_holds_at_most_the_cost_window_of_expected_reads() -> None:
    d = make(window=256, cost_window=20_000)
    peer, _ = d.seen(b"r", 0.0, LANE_READ)
    assert peer is not None
    for _ in range(5):
        d.submit(b"hog", frame(206))  # priced HEAVY_PRIOR_US until measured: one at a time
    for _ in range(3):
        d.submit(b"calm", frame(101))
    [(_, batch)] = d.batches()
    assert [c for c, _ in batch] == [b"hog"]
    assert d.batches() == []  # full: nothing more until a reply
    d.finish(peer, took_us=2_000)  # measured: later 206 requests are priced lower
    assert d.prices.cost(206, 0) < 20_000
    [(_, batch)] = d.batches()  # the next hog request, priced when queued, waits its turn
    assert [c for c, _ in batch] == [b"calm"] * 3
    d.completed(peer), d.completed(peer), d.completed(peer)
    [(_, batch)] = d.batches()
    assert [c for c, _ in batch] == [b"hog"]


def test_a_write_worker_holds_the_larger_write_window() -> None:
    d = make(window=256, cost_window=20_000, write_window=100_000)
    writer, _ = d.seen(b"w", 0.0, LANE_ALL)
    d.seen(b"r", 0.0, LANE_READ)
    assert writer is not None
    for _ in range(10):
        d.submit(b"broker", frame(103))  # priced HEAVY_PRIOR_US (20 ms) each until measured
    [(_, batch)] = [(p, b) for p, b in d.batches() if p is writer]
    assert len(batch) == 5 and writer.cost == 100_000


def test_broker_liveness_goes_before_other_requests_already_queued() -> None:
    d = make(window=1)
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    assert peer is not None
    for _ in range(10):
        d.submit(b"admin", frame(100))
    d.batches()
    d.submit(b"broker", frame(904))
    d.completed(peer)
    [(_, [(conn, sent)])] = d.batches()
    assert conn == b"broker" and sent == frame(904)


def test_other_requests_keep_a_share_under_a_storm_of_broker_requests() -> None:
    d = make(window=1)
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    assert peer is not None
    for _ in range(50):
        d.submit(b"brokers", frame(904))
    for _ in range(5):
        d.submit(b"admin", frame(100))  # PUT_KV_CONFIG: a write, in the brokers' lane
    served = []
    for _ in range(20):
        [(_, [(conn, _)])] = d.batches()
        served.append(conn)
        d.completed(peer)
    assert 3 <= served.count(b"admin") <= 5, served


def test_a_connection_whose_replies_cannot_be_written_gets_nothing_run() -> None:
    d = make()
    d.seen(b"w", 0.0, LANE_ALL)
    d.park(b"stuck", "h")
    d.submit(b"stuck", frame(206), address="h")
    assert d.batches() == [] and d.pending == 1
    d.unpark(b"stuck")
    [(_, [(conn, _)])] = d.batches()
    assert conn == b"stuck"


def test_reads_never_queue_on_a_worker_taking_writes_while_a_read_worker_lives() -> None:
    d = make(window=256, cost_window=20_000)
    writer, _ = d.seen(b"w", 0.0, LANE_ALL)
    reader, _ = d.seen(b"r", 0.0, LANE_READ)
    assert writer is not None and reader is not None
    for _ in range(50):
        d.submit(b"hog", frame(206))  # heavy reads: one at a time, on the read worker only
    d.submit(b"broker", frame(904))
    assigned = {peer.ident: [c for c, _ in batch] for peer, batch in d.batches()}
    assert assigned == {b"w": [b"broker"], b"r": [b"hog"]}
    d.completed(writer)
    d.submit(b"client", frame(105))  # a route lookup may use the idle writer
    assigned = {peer.ident: [c for c, _ in batch] for peer, batch in d.batches()}
    assert assigned == {b"w": [b"client"]}


def test_with_no_read_worker_reads_and_writes_take_turns_on_the_writers() -> None:
    d = make(window=1)
    peer, _ = d.seen(b"w", 0.0, LANE_ALL)
    assert peer is not None
    for _ in range(20):
        d.submit(b"hog", frame(101))  # priced as a heartbeat: equal turns are equal counts
        d.submit(b"broker", frame(904))
    served = []
    for _ in range(10):
        [(_, [(conn, _)])] = d.batches()
        served.append(conn)
        d.completed(peer)
    assert served.count(b"broker") == 5, served


def test_work_of_a_connection_that_reads_nothing_does_not_keep_a_drain_waiting() -> None:
    d = make()
    d.seen(b"b0", 0.0)
    d.park(b"stuck", "h")
    d.submit(b"stuck", frame(101), address="h")
    assert d.idle() and d.pending == 1
    d.unpark(b"stuck")
    assert not d.idle()


def test_work_no_business_worker_is_left_for_does_not_keep_a_drain_waiting() -> None:
    d = make()
    peer, _ = d.seen(b"b0", 0.0)
    d.submit(b"c", frame(105), address="h")
    d.submit(b"c", frame(105), address="h")
    [(_, sent)] = d.batches()
    assert not d.idle()
    assert d.drop(peer, 1.0) == sent  # answered as lost by the caller
    d.submit(b"c", frame(105), address="h")
    assert d.idle() and d.pending == 1  # queued, but no worker will ever take it
    d.seen(b"b1", 2.0)
    assert not d.idle()


def test_other_writes_wait_for_no_deep_registration_queue_and_are_not_starved() -> None:
    d = make(window=256, cost_window=10_000, write_window=100_000)
    writer, _ = d.seen(b"w", 0.0, LANE_ALL)
    d.seen(b"r", 0.0, LANE_READ)
    assert writer is not None
    for _ in range(20):
        d.submit(b"broker", frame(103))  # 20 ms each until measured: five fill the writer
    d.batches()
    assert writer.cost == 100_000
    d.submit(b"admin", frame(100))
    replies = 0
    while replies < 10:
        d.completed(writer)
        replies += 1
        before = writer.cost
        sent = [c for p, b in d.batches() if p is writer for c, _ in b]
        if b"admin" in sent:
            break
    # sent once the writer held no more than 10 ms, and within a few replies
    assert b"admin" in sent and before + 100 <= 10_000 and replies <= 6, (sent, before)
