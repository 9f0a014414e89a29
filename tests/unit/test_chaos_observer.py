"""The chaos observer: a node that does not answer costs the other nodes none of their samples."""

from __future__ import annotations

import threading

from cluster.chaos.audit import Observed
from cluster.chaos.observer import Observer, RoundBook
from tests.nodeproc import poll_until


def seen(node: str, tag: str = "") -> Observed:
    return Observed(node, 0, {"seq": 1, "tag": tag})


def test_a_round_leaves_complete_and_in_order() -> None:
    out: list[tuple[int, list[str]]] = []
    book = RoundBook(["a", "b"], lambda r, obs: out.append((r, [o.node for o in obs])))
    book.put(1, seen("b"))
    book.put(1, seen("a"))
    book.put(0, seen("b"))
    assert out == [] and book.pending == 2
    book.put(0, seen("a"))
    assert out == [(0, ["a", "b"]), (1, ["a", "b"])] and book.pending == 0


def test_a_stuck_node_leaves_the_other_nodes_their_rounds() -> None:
    release = threading.Event()
    calls = {"a": 0, "b": 0}
    rounds: list[list[Observed]] = []

    def fetch(node: str, addr: str, with_kv: bool) -> Observed:
        calls[node] += 1
        if node == "b" and calls["b"] == 1:
            release.wait(30)  # a paused node: the request hangs until its timeout
        return Observed(node, 0, {"seq": calls[node], "kv": with_kv})

    observer = Observer({"a": "h:1", "b": "h:2"}, fetch, lambda r, obs: rounds.append(obs),
                        interval_s=0.01, kv_every_rounds=1000)
    stop = threading.Event()
    runner = threading.Thread(target=observer.run, args=(stop,))
    runner.start()
    try:
        poll_until(lambda: calls["a"] >= 20, 30, 0.01, "node a sampled while b hangs")
        assert calls["b"] == 1 and rounds == []  # rounds wait for b's first answer
    finally:
        release.set()
        stop.set()
        runner.join(30)
    assert not runner.is_alive()
    assert len(rounds) == observer.rounds >= 21
    assert all([o.node for o in r] == ["a", "b"] for r in rounds)
    first_b = [r[1] for r in rounds]
    assert first_b[0].snapshot == {"seq": 1, "kv": True} and first_b[0].error is None
    assert all("no answer yet" in str(o.error) for o in first_b[1:20])
    final = rounds[-1]
    assert all(o.snapshot is not None and o.snapshot["kv"] for o in final), final


def test_a_fetch_that_raises_still_completes_its_round() -> None:
    rounds: list[list[Observed]] = []

    def fetch(node: str, addr: str, with_kv: bool) -> Observed:
        raise RuntimeError("boom")

    observer = Observer({"a": "h:1"}, fetch, lambda r, obs: rounds.append(obs), 0.01, 10)
    stop = threading.Event()
    stop.set()
    observer.run(stop)
    assert [o.error for r in rounds for o in r] == ["RuntimeError: boom"]
