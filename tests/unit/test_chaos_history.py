"""The append-only history writer: injected clock, bounded buffer, JSON lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.chaos.history import HistoryWriter, Op, read_history, write_history


class FakeClock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_records_carry_time_from_the_injected_clock() -> None:
    clock = FakeClock()
    h = HistoryWriter(None, clock)
    clock.t += 1.5
    rec = h.record("reader-1", "route", "n1", "ok", {"brokers": ["a"]}, start=1.25)
    assert rec == Op(1.5, "reader-1", "route", "n1", "ok", {"brokers": ["a"]}, 1.25)
    assert rec.began == 1.25
    assert h.records() == [rec]


def test_unknown_outcome_is_rejected() -> None:
    with pytest.raises(ValueError):
        HistoryWriter(None, FakeClock()).record("p", "x", None, "maybe")


def test_answered_means_ok_or_an_error_response() -> None:
    assert Op(1, "p", "route", "n1", "ok").answered
    assert Op(1, "p", "route", "n1", "fail", {"code": 17}).answered
    assert not Op(1, "p", "route", "n1", "fail", {"error": "refused"}).answered
    assert not Op(1, "p", "route", "n1", "unknown").answered


def test_file_history_is_buffered_and_bounded(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "history.jsonl"
    h = HistoryWriter(path, clock, buffer_lines=4)
    for i in range(3):
        clock.t += 1
        h.record("kv-1", "kv_put", "n1", "ok", {"ns": "N", "key": f"k{i}", "value": str(i)})
    assert path.read_bytes() == b""
    clock.t += 1
    h.record("kv-1", "kv_put", "n1", "unknown", {"ns": "N", "key": "k3", "value": "3"})
    assert len(path.read_bytes().splitlines()) == 4
    h.record("kv-1", "kv_put", "n1", "fail", {"error": "closed"})
    h.close()
    ops = read_history(path)
    assert [o.t for o in ops] == [1, 2, 3, 4, 4]
    assert ops[4].value == {"error": "closed"}


def test_max_records_truncates_and_says_so() -> None:
    h = HistoryWriter(None, FakeClock(), max_records=3)
    for _ in range(5):
        h.record("p", "route", "n1", "ok")
    h.close()
    h.close()
    ops = h.records()
    assert len(ops) == 4
    assert ops[-1].op == "truncated" and ops[-1].value == {"dropped": 2}


def test_records_after_close_are_dropped(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "h.jsonl", FakeClock())
    h.record("p", "route", "n1", "ok")
    h.close()
    h.record("p", "route", "n1", "ok")
    assert h.dropped == 1
    assert len(h.records()) == 1


def test_write_and_read_round_trip(tmp_path: Path) -> None:
    ops = [Op(0.5, "nemesis", "kill_node", "n2", "ok", {"phase": "apply", "event": 0}),
           Op(1.0, "reader-1", "route", "n1", "unknown", None, 0.2)]
    write_history(tmp_path / "h.jsonl", ops)
    assert read_history(tmp_path / "h.jsonl") == ops
