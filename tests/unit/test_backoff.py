"""Backoff: doubling per quick exit, cap, a new streak after a stable run; on a fake clock."""

from __future__ import annotations

import pytest

from cluster.core.backoff import Backoff
from worker.controller.children import MAX_BACKOFF_S, MIN_BACKOFF_S, STABLE_S, child_backoff


class FakeProcess:
    """A process on a fake monotonic clock: runs ``uptime`` seconds, exits, waits the delay."""

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self.now = 0.0

    def run_and_exit(self, uptime: float) -> float:
        self.now += uptime
        delay = self.backoff.on_exit(uptime)
        self.now += delay
        return delay


def test_quick_exits_double_the_delay_up_to_the_cap() -> None:
    proc = FakeProcess(Backoff(0.5, 4.0, 10.0))
    assert [proc.run_and_exit(1.0) for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert proc.backoff.streak == 6
    assert proc.now == pytest.approx(6 * 1.0 + 0.5 + 1.0 + 2.0 + 4.0 * 3)


def test_a_stable_run_starts_a_new_streak_at_the_initial_delay() -> None:
    proc = FakeProcess(Backoff(0.5, 4.0, 10.0))
    proc.run_and_exit(1.0)
    proc.run_and_exit(1.0)
    assert proc.run_and_exit(10.0) == 0.5
    assert proc.backoff.streak == 1
    assert proc.run_and_exit(1.0) == 1.0


def test_immediate_after_stable_restarts_at_once_then_from_the_initial_delay() -> None:
    proc = FakeProcess(Backoff(0.1, 5.0, 10.0, immediate_after_stable=True))
    assert [proc.run_and_exit(0.5) for _ in range(3)] == [0.1, 0.2, 0.4]
    assert proc.run_and_exit(30.0) == 0.0
    assert proc.backoff.streak == 0
    assert proc.run_and_exit(0.5) == 0.1


def test_reset_forgets_the_streak() -> None:
    proc = FakeProcess(Backoff(1.0, 8.0, 10.0))
    proc.run_and_exit(0.0)
    proc.run_and_exit(0.0)
    proc.backoff.reset()
    assert proc.backoff.streak == 0
    assert proc.run_and_exit(0.0) == 1.0


def test_is_stable_at_the_threshold() -> None:
    b = Backoff(1.0, 8.0, 10.0)
    assert not b.is_stable(9.999)
    assert b.is_stable(10.0)


@pytest.mark.parametrize(("initial", "cap"), [(-1.0, 1.0), (2.0, 1.0)])
def test_invalid_bounds_are_rejected(initial: float, cap: float) -> None:
    with pytest.raises(ValueError):
        Backoff(initial, cap, 10.0)


def test_worker_children_back_off_from_min_to_max_and_restart_stable_ones_at_once() -> None:
    proc = FakeProcess(child_backoff())
    delays = [proc.run_and_exit(0.01) for _ in range(8)]
    assert delays == [MIN_BACKOFF_S * 2 ** i for i in range(6)] + [MAX_BACKOFF_S] * 2
    assert proc.run_and_exit(STABLE_S) == 0.0
    assert proc.run_and_exit(0.01) == MIN_BACKOFF_S
