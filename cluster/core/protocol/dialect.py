"""The RocketMQ release a node answers as, where the Java 4.9.8 and 5.x NameServers differ.

One node serves 4.9 and 5.x brokers and clients at once, as the Java 5.x NameServer
does; where the two releases answer the same request differently, the node setting
``rocketmqVersion`` chooses which one it follows (README "Compatibility", row by row).
This module holds the wire-level facts of each release; the state rules that differ
take ``Dialect.five``.
"""

from __future__ import annotations

from enum import Enum

from cluster.core.protocol.codes import SERVER_VERSION, V5_5_0, SerializeType
from cluster.core.protocol.command import RemotingCommand

FAQ_4_9 = "http://rocketmq.apache.org/docs/faq/"
FAQ_5 = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"


class Dialect(Enum):
    """The release a node follows: the value of its ``rocketmqVersion`` setting."""

    V5_5_0 = "5.5.0"
    V4_9_8 = "4.9.8"

    @property
    def five(self) -> bool:
        """5.x semantics: the live table keyed by (cluster, address), acting master, ..."""
        return self is Dialect.V5_5_0

    @property
    def reply_version(self) -> int:
        """The MQVersion ordinal the release writes in its replies."""
        return V5_5_0 if self.five else SERVER_VERSION

    @property
    def faq_url(self) -> str:
        """The FAQ link of the "no topic route info" remark."""
        return FAQ_5 if self.five else FAQ_4_9

    def stamp(self, reply: RemotingCommand) -> RemotingCommand:
        """``reply`` as the release writes it: its version, and (5.x) always a JSON header,
        whatever the request's encoding (4.9 answers in the request's encoding)."""
        reply.version = self.reply_version
        if self.five:
            reply.serialize_type = SerializeType.JSON
        return reply


DEFAULT = Dialect.V5_5_0
NAMES: tuple[str, ...] = tuple(d.value for d in Dialect)


def dialect_of(name: str | None) -> Dialect:
    """The dialect named by a ``rocketmqVersion`` value; the default for None."""
    return DEFAULT if name is None else Dialect(name)
