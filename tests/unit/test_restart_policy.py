"""RestartPolicy: back-off doubling, cap, reset after a stable run, flap detection."""

from __future__ import annotations

import pytest

from supervisor.policy import RestartPolicy


def policy(**kw: float) -> RestartPolicy:
    args = {"initial_s": 0.5, "max_s": 4.0, "stable_after_s": 10.0,
            "flap_window_s": 60.0, "flap_max": 5, **kw}
    return RestartPolicy(**args)  # type: ignore[arg-type]


def test_backoff_doubles_and_is_capped() -> None:
    p = policy(flap_max=100)
    delays = [p.on_exit(now=float(i), uptime_s=1.0).delay_s for i in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_stable_run_resets_backoff_and_is_not_a_quick_crash() -> None:
    p = policy()
    p.on_exit(0.0, 1.0)
    p.on_exit(1.0, 1.0)
    d = p.on_exit(100.0, uptime_s=50.0)
    assert d.restart and d.delay_s == 0.5
    assert p.quick_crashes == 0


def test_flapping_gives_up_after_max_quick_exits_in_window() -> None:
    p = policy(flap_max=3)
    assert p.on_exit(0.0, 0.1).restart
    assert p.on_exit(1.0, 0.1).restart
    d = p.on_exit(2.0, 0.1)
    assert not d.restart
    assert "flapping" in d.reason


def test_quick_exits_outside_the_window_are_forgotten() -> None:
    p = policy(flap_max=3, flap_window_s=10.0)
    p.on_exit(0.0, 0.1)
    p.on_exit(8.0, 0.1)
    d = p.on_exit(16.0, 0.1)
    assert d.restart
    assert p.quick_crashes == 2


def test_reset_forgets_history() -> None:
    p = policy(flap_max=2)
    p.on_exit(0.0, 0.1)
    p.reset()
    d = p.on_exit(1.0, 0.1)
    assert d.restart and d.delay_s == 0.5


@pytest.mark.parametrize("kw", [{"initial_s": -1.0}, {"max_s": 0.1}, {"flap_max": 0},
                                {"flap_window_s": 0.0}])
def test_invalid_bounds_are_rejected(kw: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        policy(**kw)
