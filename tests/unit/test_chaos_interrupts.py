"""A chaos run's interrupts: raised at once, and remembered when something swallows them."""

from __future__ import annotations

import signal

import pytest

from cluster.chaos.runner import Interrupts


def _swallowing(sig: int) -> None:
    """The signal lands in code that drops what it raises (as a finalizer's caller does)."""
    try:
        signal.raise_signal(sig)
        for _ in range(1000):  # the handler runs at the latest on the next bytecodes
            pass
    except KeyboardInterrupt:
        pass


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_raises_where_it_lands(sig: int) -> None:
    interrupts = Interrupts()
    with pytest.raises(KeyboardInterrupt), interrupts.raising():
        signal.raise_signal(sig)
        for _ in range(1000):
            pass
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_swallowed_interrupt_is_raised_again_at_the_next_check(sig: int) -> None:
    interrupts = Interrupts()
    with interrupts.raising():
        interrupts.check()  # nothing yet
        _swallowing(sig)
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()


def test_the_previous_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with Interrupts().raising():
        assert signal.getsignal(signal.SIGINT) is not before[0]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
