"""The RemotingCommand value type shared by both directions of the protocol."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cluster.core.protocol.codes import FLAG_ONEWAY, FLAG_RESPONSE, SERVER_VERSION, SerializeType

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_INT32_TEXT = re.compile(r"[+-]?[0-9]+")


@dataclass(slots=True)
class RemotingCommand:
    code: int
    opaque: int = 0
    flag: int = 0
    version: int = 0
    language: str | None = "JAVA"
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: bytes | None = None
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def field(self, name: str) -> str | None:
        """One extFields value, or None when absent (Java's missing-field semantics)."""
        ext = self.ext_fields
        return None if ext is None else ext.get(name)


def java_int(text: str | None) -> int | None:
    """``Integer.parseInt`` of a header value: None when Java's parse fails (the field then
    keeps its default)."""
    if text is None or not _INT32_TEXT.fullmatch(text):
        return None
    value = int(text)
    return value if INT32_MIN <= value <= INT32_MAX else None


def response_to(
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    ext_fields: dict[str, str] | None = None,
    body: bytes | None = None,
) -> RemotingCommand:
    """A reply to `request`: same opaque and serialize type, response flag set."""
    return RemotingCommand(
        code=int(code),
        opaque=request.opaque,
        flag=FLAG_RESPONSE,
        version=SERVER_VERSION,
        language="JAVA",
        remark=remark,
        ext_fields=ext_fields,
        body=body,
        serialize_type=request.serialize_type,
    )
