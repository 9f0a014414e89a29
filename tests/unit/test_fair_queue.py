"""Fair queueing per address and connection, and the prices it charges."""

from __future__ import annotations

from worker.io.fair_queue import FairQueue
from worker.io.pricing import DEFAULT_US, HEAVY_PRIOR_US, Prices


def drain(q: FairQueue) -> list[str]:
    out = []
    while (item := q.pop()) is not None:
        out.append(item)
    return out


def test_a_backlog_does_not_delay_a_connection_with_one_request() -> None:
    q = FairQueue()
    for i in range(1000):
        q.push(b"hog", "10.0.0.1", f"hog{i}", 500)
    assert q.pop() == "hog0"
    q.push(b"calm", "10.0.0.2", "calm", 1)
    assert q.pop() == "calm"  # it starts now: ahead of the hog's next turn
    assert len(q) == 999


def test_connections_of_one_address_share_it_fairly_by_cost() -> None:
    q = FairQueue()
    for i in range(4):
        q.push(b"heavy", "127.0.0.1", f"H{i}", 100)
    for i in range(400):
        q.push(b"light", "127.0.0.1", f"l{i}", 1)
    order = drain(q)
    # between two heavy requests the light connection gets about 100 requests
    first, second = order.index("H1"), order.index("H2")
    assert 90 <= second - first - 1 <= 110, order[:300]


def test_addresses_share_fairly_however_many_connections_they_open() -> None:
    q = FairQueue()
    for c in range(50):
        for _ in range(10):
            q.push(b"crowd%d" % c, "10.0.0.1", "crowd", 10)
    for _ in range(10):
        q.push(b"lone", "10.0.0.2", "lone", 10)
    first_20 = [q.pop() for _ in range(20)]
    assert first_20.count("lone") == 10  # half the turns, not one in 51


def test_a_parked_connection_is_passed_over_until_unparked() -> None:
    q = FairQueue()
    q.push(b"a", "h", "a1", 1)
    q.park(b"a", "h")
    q.push(b"a", "h", "a2", 1)  # queued while parked: waits too
    q.push(b"b", "h", "b1", 1)
    assert q.pop() == "b1" and q.pop() is None and q.peek() is None
    assert len(q) == 2
    q.unpark(b"a")
    assert drain(q) == ["a1", "a2"]


def test_a_parked_connection_without_work_stays_parked() -> None:
    q = FairQueue()
    q.park(b"a", "h")
    q.push(b"a", "h", "a1", 1)
    assert q.pop() is None
    q.unpark(b"a")
    assert q.pop() == "a1"


def test_discard_drops_a_closed_connection_before_it_runs() -> None:
    q = FairQueue()
    for i in range(3):
        q.push(b"gone", "h", f"g{i}", 1)
        q.push(b"kept", "h", f"k{i}", 1)
    assert q.pop() == "g0"
    assert sorted(q.discard(b"gone")) == ["g1", "g2"]
    assert q.discard(b"gone") == []
    assert drain(q) == ["k0", "k1", "k2"] and len(q) == 0


def test_heaviest_names_the_longest_queue_of_the_busiest_address() -> None:
    q = FairQueue()
    assert q.heaviest() is None
    for c, n in ((b"x1", 3), (b"x2", 4)):
        for _ in range(n):
            q.push(c, "busy", c, 1)
    for _ in range(5):
        q.push(b"y", "other", b"y", 1)
    assert q.heaviest() == (b"x2", 4)
    assert q.evict_newest(b"x2") == b"x2" and len(q) == 11
    assert q.evict_newest(b"nobody") is None


def test_an_evicted_last_item_leaves_no_stale_turn() -> None:
    q = FairQueue()
    q.push(b"a", "h", "a1", 1)
    q.push(b"b", "h", "b1", 1)
    assert q.evict_newest(b"a") == "a1"
    assert drain(q) == ["b1"] and len(q) == 0


def test_prices_start_from_priors_and_follow_what_requests_took() -> None:
    p = Prices()
    assert p.cost(101, 200) == DEFAULT_US
    assert p.cost(206, 200) == HEAVY_PRIOR_US
    assert p.cost(103, 16 << 20) == HEAVY_PRIOR_US + (16 << 10)  # a microsecond per KiB
    p.observe(101, 40)
    assert p.cost(101, 0) == 40
    p.observe(101, 10_040)
    assert p.cost(101, 0) == 5040  # half way up
    p.observe(101, 40)
    assert p.cost(101, 0) == 5040 - 5000 // 8  # an eighth of the way down
    for _ in range(200):
        p.observe(206, 1000)
    assert p.cost(206, 0) < 1010
