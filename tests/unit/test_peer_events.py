"""Events caused by peers: logged once per kind and address, then counted and summarised."""

from __future__ import annotations

import logging

import pytest

from worker import limits
from worker.limits import SUMMARY_S, PeerEvents


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_one_line_per_kind_and_peer_then_a_count_per_minute(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "pynamesrv.io")
    events = limits.bad_requests()
    for _ in range(1000):
        events.hit(limits.BAD_FRAME, "10.0.0.1", "negative length")
        events.hit(limits.BAD_HEADER, "10.0.0.1", "header is not JSON")
    events.hit(limits.BAD_HEADER, "10.0.0.2", "header is not JSON")
    events.summarize(0.0)
    assert lines(caplog) == [
        "event=bad_request reason=frame peer=10.0.0.1 detail='negative length' "
        "(further ones from this peer are counted, not logged)",
        "event=bad_request reason=header peer=10.0.0.1 detail='header is not JSON' "
        "(further ones from this peer are counted, not logged)",
        "event=bad_request reason=header peer=10.0.0.2 detail='header is not JSON' "
        "(further ones from this peer are counted, not logged)",
    ]
    caplog.clear()
    events.summarize(SUMMARY_S - 1)
    assert lines(caplog) == []
    events.summarize(SUMMARY_S)
    assert lines(caplog) == [
        "event=bad_request_counts reason=frame count=999 peers=1 seconds=60",
        "event=bad_request_counts reason=header count=999 peers=1 seconds=60"]
    caplog.clear()
    events.summarize(3 * SUMMARY_S)  # nothing new: no line
    assert lines(caplog) == [] and events.total(limits.BAD_HEADER) == 1001


def test_the_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_PEERS", 3)
    events = PeerEvents()
    for i in range(10):
        events.hit(limits.MAX_CONNECTIONS, f"10.0.0.{i}")
    assert len(events.counts) == 4 and events.counts[(limits.MAX_CONNECTIONS, "other")] == 7
