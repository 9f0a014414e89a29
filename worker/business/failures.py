"""What a request whose processing failed is answered, and what of it is logged."""

from __future__ import annotations

import errno
import logging

from cluster.core.protocol.codes import ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand, response_to
from worker.limits import PeerEvents

# Writes the node could not make (a full disk): logged once per error and file, then counted.
WRITE_FAILURES = PeerEvents("write_failed", "error", logging.getLogger("pynamesrv.business"),
                            who="file")


def failed(cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
    """SYSTEM_ERROR for a handler's exception; a write the node could not make (OSError:
    ENOSPC, EIO, ...) is the operator's business too, so it is logged."""
    if isinstance(exc, OSError):
        WRITE_FAILURES.hit(errno.errorcode.get(exc.errno or 0, "EIO"), str(exc.filename),
                           str(exc))
    return system_error(cmd, exc)


def system_error(cmd: RemotingCommand, exc: BaseException) -> RemotingCommand:
    """The reply to a request whose processing failed. As in 4.9, the remoting layer makes
    it, not the processor, so it keeps the server's default encoding (JSON) whatever
    the request's encoding."""
    reply = response_to(cmd, ResponseCode.SYSTEM_ERROR, _error_remark(exc))
    reply.serialize_type = SerializeType.JSON
    return reply


def _error_remark(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
