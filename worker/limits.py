"""Connection limits hit by remote peers: counted per (limit, address), logged once each.

A hostile or broken peer hits a limit again and again; the log gets one line per
peer and limit, the counts keep the rest. The table is bounded: past
``MAX_PEERS`` distinct keys, hits are counted under the address ``"other"``.
"""

from __future__ import annotations

import logging
from collections import Counter

log = logging.getLogger("pynamesrv.io")
MAX_PEERS = 10_000

MAX_CONNECTIONS = "maxConnections"
MAX_CONNECTIONS_PER_ADDRESS = "maxConnectionsPerAddress"
FRAME_TOO_LARGE = "frameMaxLength/headerMaxLength"
PENDING_BYTES = "connectionMaxPendingBytes"
PENDING_REQUESTS = "connectionMaxPendingRequests"
FRAME_READ_TIMEOUT = "frameReadTimeoutSeconds"
WRITE_TIMEOUT = "connectionWriteTimeoutSeconds"


class LimitHits:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def hit(self, limit: str, address: str, detail: str = "") -> None:
        key = (limit, address)
        if key not in self.counts and len(self.counts) >= MAX_PEERS:
            key = (limit, "other")
        self.counts[key] += 1
        if self.counts[key] == 1:
            log.warning("event=limit_hit limit=%s peer=%s %s(further hits from this peer are "
                        "counted, not logged)", limit, address, f"detail={detail!r} " if detail
                        else "")

    def total(self, limit: str) -> int:
        return sum(n for (name, _), n in self.counts.items() if name == limit)
