"""GO_AWAY: what a node answers while it shuts down gracefully (5.x ``enableShutdownGracefully``).

For ``shutdownWaitTimeSeconds`` after SIGTERM the node keeps its port open and answers
every request of a client newer than 5.3.1 (request version above V5_3_1) with GO_AWAY
(1500, "please go away"), without running it; such a client reconnects and, once the
node is gone, uses another NameServer. Older clients are served as usual meanwhile.
Oneway requests of new clients get nothing and are not run.
"""

from __future__ import annotations

from cluster.core.protocol.codes import V5_3_1, ResponseCode
from cluster.core.protocol.command import response_to
from cluster.core.protocol.dialect import Dialect
from cluster.core.protocol.frame import FrameError, decode_command, encode_command

REMARK = "please go away"


def go_away_reply(frame: bytes | memoryview, dialect: Dialect) -> bytes | None:
    """The encoded GO_AWAY reply to a request (b"" when it gets none but must not run), or
    None when the request is to be served (an older client's, or not a request)."""
    try:
        cmd = decode_command(frame, fastjson2=dialect.five)
    except FrameError:
        return None  # the business pool answers a malformed frame as it always does
    if cmd.is_response or cmd.version <= V5_3_1:
        return None
    if cmd.is_oneway:
        return b""
    return encode_command(dialect.stamp(response_to(cmd, ResponseCode.GO_AWAY, REMARK)))
