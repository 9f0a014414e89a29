"""Every check of a finished run: the invariants of ``checkers`` and, after ``--load``, the
load checks of ``load_checks``."""

from __future__ import annotations

from collections.abc import Iterable

from cluster.chaos.checkers import (
    CHECKERS,
    CheckConfig,
    CheckResult,
    HistoryView,
    config_from_history,
)
from cluster.chaos.history import Op
from cluster.chaos.load.checks import run_load_checks


def run_checks(ops: Iterable[Op], cfg: CheckConfig | None = None) -> list[CheckResult]:
    """Every checker, plus the load checks when the run had ``--load``."""
    view = HistoryView(ops)
    cfg = cfg or config_from_history(view)
    return [check(view, cfg) for check in CHECKERS] + run_load_checks(view, cfg)
