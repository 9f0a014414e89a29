"""``audit watch``'s fallback: a node that does not know GET_NODE_DIGEST is read another way."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.audit.watch import FallbackSource
from cluster.core.digest_source import TablesDigest
from cluster.core.node_link import NotAnswering


class NoDigest(TablesDigest):
    """A node answering REQUEST_CODE_NOT_SUPPORTED to the digest code."""

    kind = "digest"

    def __init__(self) -> None:
        super().__init__("j1", "digest", lambda timeout: (0, {}))
        self.closed = False

    def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]:
        raise NotAnswering("response code 3  request type 60002 not supported",
                           unsupported=True)

    def close(self) -> None:
        self.closed = True


def test_a_node_without_the_digest_code_is_read_through_the_fallback() -> None:
    said: list[str] = []
    tables = {"broker": {"b": {"cluster": "C", "brokerAddrs": {"0": "h:1"}}}, "topic": {}}
    digest = NoDigest()
    src = FallbackSource(digest, lambda: TablesDigest("j1", "standard codes",
                                                      lambda t: (5, tables)), said.append)
    doc = src.summary(1.0)
    assert doc["tables"]["broker"]["keys"] == 1 and set(doc["tables"]) == {"broker", "topic"}
    assert src.kind == "standard codes" and digest.closed
    assert said == ["j1 does not answer GET_NODE_DIGEST (response code 3  request type 60002 "
                    "not supported); reading it through the standard request codes "
                    "(standard codes)"]
    assert src.summary(1.0) == doc and len(said) == 1


def test_a_silent_node_stays_on_the_digest_code() -> None:
    def dead(timeout: float) -> tuple[int, dict[str, Any]]:
        raise NotAnswering("no answer within 1s")

    digest = NoDigest()
    src = FallbackSource(digest, lambda: TablesDigest("j1", "standard codes", dead),
                         lambda s: None)
    with pytest.raises(NotAnswering, match="not supported"):
        src.summary(1.0)
    assert src.kind == "digest" and not digest.closed
    no_fallback = FallbackSource(NoDigest(), None, lambda s: None)
    with pytest.raises(NotAnswering):
        no_fallback.summary(1.0)
