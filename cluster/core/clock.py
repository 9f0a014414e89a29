"""Wall-clock time as the wire and the reports use it: epoch milliseconds, UTC clock text."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def wall_ms() -> int:
    """Milliseconds since the epoch (DataVersion timestamps, snapshot times, heartbeats)."""
    return time.time_ns() // 1_000_000


def clock_text(ms: float | None) -> str:
    """``HH:MM:SS.mmm`` in UTC, as reports and timelines print an instant; ``-`` for none."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
