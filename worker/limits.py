"""What remote peers cause (limits hit, malformed requests, ACL refusals): counted per kind
and address, logged once each, and summarised with counts at most once a minute.

A hostile or broken peer does the same thing again and again; the log gets one line per
peer and kind, then one line per kind and minute saying how many more there were and
from how many peers, whatever the rate. The table is bounded: past ``MAX_PEERS``
distinct keys, events are counted under the address ``"other"``.
"""

from __future__ import annotations

import logging
from collections import Counter

log = logging.getLogger("pynamesrv.io")
MAX_PEERS = 10_000
SUMMARY_S = 60.0

MAX_CONNECTIONS = "maxConnections"
MAX_CONNECTIONS_PER_ADDRESS = "maxConnectionsPerAddress"
FRAME_TOO_LARGE = "frameMaxLength/headerMaxLength"
PENDING_BYTES = "connectionMaxPendingBytes"
PENDING_REQUESTS = "connectionMaxPendingRequests"
FRAME_READ_TIMEOUT = "frameReadTimeoutSeconds"
WRITE_TIMEOUT = "connectionWriteTimeoutSeconds"
# Malformed requests (event=bad_request): the connection is closed.
BAD_FRAME = "frame"  # a length or header word that cannot be (negative, unknown encoding)
BAD_HEADER = "header"  # a header that does not decode (bad JSON, unknown language code)


class PeerEvents:
    """Events of one sort (``event``, their kinds named by ``key``) caused by peers."""

    def __init__(self, event: str = "limit_hit", key: str = "limit",
                 logger: logging.Logger = log, who: str = "peer") -> None:
        self.event = event
        self.key = key
        self.who = who  # what the address is: a peer's, or a file's
        self.log = logger
        self.counts: Counter[tuple[str, str]] = Counter()
        self._unlogged: Counter[str] = Counter()  # by kind, since the last summary
        self._peers: dict[str, set[str]] = {}
        self._last_summary: float | None = None

    def hit(self, kind: str, address: str, detail: str = "") -> None:
        key = (kind, address)
        if key not in self.counts and len(self.counts) >= MAX_PEERS:
            key = (kind, "other")
        self.counts[key] += 1
        if self.counts[key] == 1:
            self.log.warning("event=%s %s=%s %s=%s %s(further ones from this %s are "
                             "counted, not logged)", self.event, self.key, kind, self.who,
                             address, f"detail={detail!r} " if detail else "", self.who)
            return
        self._unlogged[kind] += 1
        peers = self._peers.setdefault(kind, set())
        if len(peers) < MAX_PEERS:
            peers.add(key[1])

    def summarize(self, now: float) -> None:
        """One line per kind with events counted but not logged, at most every
        ``SUMMARY_S`` (``now``: any monotonic clock)."""
        if self._last_summary is None:
            self._last_summary = now
        if now < self._last_summary + SUMMARY_S or not self._unlogged:
            return
        for kind, n in sorted(self._unlogged.items()):
            self.log.warning("event=%s_counts %s=%s count=%d %ss=%d seconds=%.0f",
                             self.event, self.key, kind, n, self.who,
                             len(self._peers.get(kind, ())), now - self._last_summary)
        self._unlogged.clear()
        self._peers.clear()
        self._last_summary = now

    def total(self, kind: str) -> int:
        return sum(n for (name, _), n in self.counts.items() if name == kind)


LimitHits = PeerEvents  # the connection limits: event=limit_hit limit=...


def bad_requests(logger: logging.Logger = log) -> PeerEvents:
    """Malformed requests: event=bad_request reason=frame|header."""
    return PeerEvents("bad_request", "reason", logger)
