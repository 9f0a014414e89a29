"""The client-side exception tree.

``ClientError`` is the root; every failure a client call can meet is one of:

* ``ConnectError`` - the node could not be reached (refused, reset, closed);
  ``ConnectionLost`` when an established connection died mid-call;
* ``CallTimeout`` - no answer within the call's timeout (a slow or paused node);
* ``RemoteError`` - the node answered with a non-SUCCESS response code;
* ``ProtocolError`` - the node answered with bytes that are not a valid
  remoting frame or body.

Each carries ``addr`` (``host:port`` or ``None`` when no node was chosen).
"""

from __future__ import annotations


class ClientError(Exception):
    """Any failure of a call to a NameServer node."""

    kind = "error"

    def __init__(self, message: str, addr: str | None = None) -> None:
        super().__init__(message)
        self.addr = addr

    def __str__(self) -> str:
        base = super().__str__()
        return f"{self.addr}: {base}" if self.addr else base


class ConnectError(ClientError):
    """The node is unreachable: connection refused, reset or closed."""

    kind = "connect"


class ConnectionLost(ConnectError):
    """An established connection closed before the answer arrived."""

    kind = "connection-lost"


class CallTimeout(ClientError):
    """No answer within the timeout (connect, write or reply)."""

    kind = "timeout"


class RemoteError(ClientError):
    """The node answered with a response code other than SUCCESS."""

    kind = "remote"

    def __init__(self, code: int, remark: str | None, addr: str | None = None) -> None:
        text = f"response code {code}" if remark is None else f"response code {code}: {remark}"
        super().__init__(text, addr)
        self.code = code
        self.remark = remark


class ProtocolError(ClientError):
    """The node sent something that is not a valid frame or body."""

    kind = "protocol"
