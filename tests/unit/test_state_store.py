"""The LMDB store: tables, generation counter, multi-process use, and a writer SIGKILLed mid-txn."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.store import APPLIED, APPLIED_QUEUES, Store, dumps

ROOT = Path(__file__).resolve().parents[2]
KEYS = 3000
WRITER = f"""
import sys
from state.store import APPLIED, Store
store = Store.open(sys.argv[1])
out = sys.stdout.buffer
r = 0
while True:
    r += 1
    with store.write() as t:
        for i in range({KEYS}):
            t.put("topic", "k%05d" % i, {{"round": r, "pad": "x" * 100}})
            if i == 0:
                out.write(b"i")
                out.flush()
"""


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 64 << 20)
    yield s
    s.destroy()


def test_put_get_items_prefix_and_delete(store: Store) -> None:
    with store.write() as t:
        for key in ("1.10.1", "1.10.2", "1.100.1", "2.10.1"):
            t.put("channel", key, [key])
        assert t.delete("channel", "2.10.1") and not t.delete("channel", "2.10.1")
    with store.read() as t:
        assert [k for k, _ in t.items("channel", "1.10.")] == ["1.10.1", "1.10.2"]
        assert t.keys("channel") == ["1.10.1", "1.10.2", "1.100.1"]
        assert t.get("channel", "nope") is None


def test_count_is_the_number_of_keys(store: Store) -> None:
    with store.write() as t:
        for i in range(5):
            t.put("broker", f"b{i}", {"i": i})
            t.put("topic", f"T{i}", {"b0": {"perm": 6}})  # one shared value, five topics
        t.delete("broker", "b3")
        assert (t.count("broker"), t.count("topic")) == (4, 5) == (len(t.keys("broker")),
                                                                 len(t.keys("topic")))
    with store.read() as t:
        assert (t.count("broker"), t.count("topic"), t.count("cluster")) == (4, 5, 0)


def test_exception_aborts_the_write(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write() as t:
        t.put("topic", "T", {"b": 1})
        raise RuntimeError("boom")
    with store.read() as t:
        assert t.get("topic", "T") is None and t.generation() == 0


def test_generation_bumps_once_per_changing_write(store: Store) -> None:
    for _ in range(2):
        with store.write() as t:
            t.put("topic", "T", {"b": 1})
            t.put("broker", "b", {"x": 1})
            t.put("live", "a", {"t": 1})
    with store.read() as t:
        assert t.generation() == 1


def test_readers_see_a_snapshot(store: Store) -> None:
    with store.write() as t:
        t.put("kv", "ns", {"k": "1"})
    with store.read() as r:
        with store.write() as t:
            t.put("kv", "ns", {"k": "2"})
        assert r.get("kv", "ns") == {"k": "1"}
    with store.read() as r:
        assert r.get("kv", "ns") == {"k": "2"}


def test_open_from_another_process(store: Store) -> None:
    with store.write() as t:
        t.put("kv", "ns", {"k": "v"})
    code = ("import sys\nfrom state.store import Store\ns = Store.open(sys.argv[1])\n"
            "with s.read() as t:\n    print(t.get('kv', 'ns')['k'])")
    out = subprocess.run([sys.executable, "-c", code, store.path], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "v"


def test_open_missing_store_fails(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Store.open(str(tmp_path / "none"))


def _kill_writer_inside_txn(path: str, rng: random.Random) -> int:
    """Start a writer, SIGKILL it inside its n-th transaction (n in 2..3); returns n."""
    rounds = rng.randint(2, 3)
    proc = subprocess.Popen([sys.executable, "-c", WRITER, path], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        for _ in range(rounds):
            assert proc.stdout.read(1) == b"i"
        if rng.random() < 0.5:
            os.sched_yield()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return rounds


def _committed_round(store: Store) -> int:
    """The one round every key holds; fails if keys disagree (a torn transaction)."""
    with store.read() as t:
        values = [v for _, v in t.items("topic", "k")]
    rounds = {v["round"] for v in values}
    assert len(values) == KEYS, f"torn write: {len(values)} keys"
    assert len(rounds) == 1, f"torn write: rounds {rounds}"
    return rounds.pop()


def test_writer_sigkilled_mid_transaction_leaves_store_usable(store: Store) -> None:
    from tests.unit.test_processors import make_ctx, register_request, route_request
    from worker.business.processors import handle

    ctx = make_ctx(store, clock=lambda: 1000)
    rng = random.Random(7)
    inside = 0
    for i in range(10):
        killed_in = _kill_writer_inside_txn(store.path, rng)
        store.reader_check()
        inside += _committed_round(store) == killed_in - 1
        reply = handle(ctx, register_request(f"b{i}", f"10.0.0.{i}:10911", {f"T{i}": 4}),
                       f"0.1.{i}", "")
        assert reply is not None and reply.code == 0
        reply = handle(ctx, route_request(f"T{i}"), "0.9.9", "")
        assert reply is not None and reply.code == 0 and reply.body is not None
        assert f"10.0.0.{i}".encode() in reply.body
    with store.read() as t:
        assert len(t.keys("broker")) == 10
    assert inside >= 5, "the writer was rarely killed inside its transaction"


def test_topic_edits_clear_the_applied_digests_unless_registering(store: Store) -> None:
    with store.write() as t:
        t.put(APPLIED, "b", "d1")
        t.put("topic", "T", {"b": 1}, registering=True)
        assert t.get(APPLIED, "b") == "d1"
        t.put("topic", "T", {"b": 2})
        assert t.get(APPLIED, "b") is None
        t.put(APPLIED, "b", "d2")
        t.put("topic", "U", {"b": 1})
        assert t.get(APPLIED, "b") is None
        t.put(APPLIED, "b", "d3")
    with store.write() as t:
        t.put("live", "a", {"t": 1})
        t.put("topic", "U", {"b": 1})
        assert t.get(APPLIED, "b") == "d3"
        t.delete("topic", "U")
        assert t.get(APPLIED, "b") is None


def test_topic_edits_clear_the_applied_queues_too(store: Store) -> None:
    with store.write() as t:
        t.put(APPLIED, "b", "d1")
        t.put_raw(APPLIED_QUEUES, "b", dumps({"T": [6, 4, 0, 4]}))
        t.put("topic", "T", {"b": 1}, registering=True)
        assert t.get(APPLIED_QUEUES, "b") == {"T": [6, 4, 0, 4]}
        t.put("topic", "T", {"b": 2})
        assert t.get(APPLIED, "b") is None and t.get_raw(APPLIED_QUEUES, "b") is None
        t.put_raw(APPLIED_QUEUES, "b", dumps({"T": [6, 4, 0, 4]}))
        t.delete("topic", "T")
        assert t.get_raw(APPLIED_QUEUES, "b") is None


def test_put_raw_and_get_raw_round_trip_and_skip_identical_values(store: Store) -> None:
    with store.write() as t:
        t.put_raw("topic", "T", dumps({"b": 1}))
        assert t.get_raw("topic", "T") == b'{"b":1}' and t.get("topic", "T") == {"b": 1}
    with store.read() as t:
        gen = t.generation()
    with store.write() as t:
        t.put_raw("topic", "T", b'{"b":1}')
        assert not t.route_changed
    with store.read() as t:
        assert t.generation() == gen and t.get_raw("topic", "U") is None


def test_applied_digests_do_not_move_the_generation(store: Store) -> None:
    with store.write() as t:
        t.put(APPLIED, "b", "d1")
        t.delete(APPLIED, "b")
    with store.read() as t:
        assert t.generation() == 0
