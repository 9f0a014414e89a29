"""Where a node's digests come from: the node itself (GET_NODE_DIGEST), or its tables.

``RemoteDigest`` asks a pynamesrv node. ``TablesDigest`` computes the same
digests from snapshot-shaped tables read some other way (a NameServer that does
not know the code, read through the standard request codes), so both kinds of
node are compared alike. Both raise ``NotAnswering`` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from cluster.core.node_link import NodeLink, NotAnswering
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.digest_body import (
    MAX_VALUES,
    DigestQuery,
    drill_of_tables,
    encode_query,
    summary_of_tables,
    values_of_tables,
)

Units = dict[str, dict[str, str]]


class DigestSource(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str:
        """"digest" (asked with GET_NODE_DIGEST), else how the tables are read."""

    def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]: ...
    def drill(self, table: str, buckets: frozenset[int], timeout: float) -> Units: ...
    def values(self, table: str, units: Sequence[tuple[str, str]],
               timeout: float) -> list[list[Any]]: ...
    def received(self) -> int: ...
    def close(self) -> None: ...


def _expect(doc: Mapping[str, Any], name: str, kind: type) -> Any:
    value = doc.get(name)
    if not isinstance(value, kind):
        raise NotAnswering(f"digest reply has no {name!r}")
    return value


class RemoteDigest:
    kind = "digest"

    def __init__(self, name: str, host: str, port: int, origin: str) -> None:
        self.name = name
        self.link = NodeLink(host, port, origin)

    def _ask(self, query: DigestQuery, timeout: float) -> dict[str, Any]:
        return self.link.call_json(RequestCode.GET_NODE_DIGEST, timeout, encode_query(query))

    def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]:
        doc = self._ask(DigestQuery(heartbeats=heartbeats), timeout)
        _expect(doc, "tables", dict)
        return doc

    def drill(self, table: str, buckets: frozenset[int], timeout: float) -> Units:
        units: Units = _expect(self._ask(DigestQuery(table, buckets=buckets), timeout),
                               "units", dict)
        return units

    def values(self, table: str, units: Sequence[tuple[str, str]],
               timeout: float) -> list[list[Any]]:
        out: list[list[Any]] = []
        for i in range(0, len(units), MAX_VALUES):
            chunk = tuple(units[i:i + MAX_VALUES])
            out += _expect(self._ask(DigestQuery(table, units=chunk), timeout), "values", list)
        return out

    def received(self) -> int:
        return self.link.received

    def close(self) -> None:
        self.link.close()


class TablesDigest:
    """Digests computed here from tables ``read(timeout)`` returns (snapshot-shaped, the
    tables it can see); drill-downs and values come from the tables of the last summary."""

    def __init__(self, name: str, kind: str,
                 read: Callable[[float], tuple[int, dict[str, Any]]],
                 received: Callable[[], int] = lambda: 0, close: Callable[[], None] = lambda: None
                 ) -> None:
        self.name = name
        self.kind = kind
        self._read = read
        self._received = received
        self._close = close
        self._tables: dict[str, Any] = {}

    def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]:
        taken_at, self._tables = self._read(timeout)
        return summary_of_tables(self.name, taken_at, self._tables)

    def drill(self, table: str, buckets: frozenset[int], timeout: float) -> Units:
        units: Units = drill_of_tables(table, self._tables.get(table) or {}, buckets)["units"]
        return units

    def values(self, table: str, units: Sequence[tuple[str, str]],
               timeout: float) -> list[list[Any]]:
        values: list[list[Any]] = values_of_tables(table, self._tables.get(table) or {},
                                                   units)["values"]
        return values

    def received(self) -> int:
        return self._received()

    def close(self) -> None:
        self._close()
