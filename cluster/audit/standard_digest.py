"""``audit watch``'s source for a node that does not answer GET_NODE_DIGEST: its tables read
with ``cluster.audit.reader`` (the snapshot where the node answers it, else RocketMQ's own
request codes within the reader's budget), digested here (``TablesDigest``).

Tables the reader cannot see (``live`` and ``filter`` of a node read the standard way) are
left out of the summary, so the watch compares only what every node shows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cluster.audit.reader import ClusterReader, NodeFailed, ReadLimits
from cluster.client.errors import ClientError
from cluster.core.digest_source import TablesDigest
from cluster.core.node_link import NotAnswering

KIND = "standard codes"
ORIGIN = "audit"


def standard_source(name: str, host: str, port: int, origin: str = ORIGIN,
                    limits: ReadLimits | None = None) -> TablesDigest:
    """``name`` at ``host:port`` read with ``limits`` (its timeout is the watch's deadline)."""
    addr = f"{host}:{port}"
    readers: dict[float, ClusterReader] = {}

    def reader(timeout: float) -> ClusterReader:
        if timeout not in readers:  # the watch's deadline is the same each round
            for old in readers.values():
                old.close()
            readers.clear()
            readers[timeout] = ClusterReader(
                {name: addr}, replace(limits or ReadLimits(), timeout_s=timeout), origin=origin)
        return readers[timeout]

    def read(timeout: float) -> tuple[int, dict[str, Any]]:
        try:
            snapshot = reader(timeout).read_node(name)
        except (ClientError, NodeFailed) as exc:
            raise NotAnswering(str(exc)) from None
        return int(snapshot["takenAt"]), dict(snapshot["tables"])

    def received() -> int:
        return sum(r.pool.traffic(addr)[1] for r in readers.values())

    def close() -> None:
        for r in readers.values():
            r.close()
        readers.clear()

    return TablesDigest(name, KIND, read, received, close)
