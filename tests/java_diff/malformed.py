"""Frames and headers that are malformed, lenient or unusual, each on a connection of its own.

Both servers must agree on whether they answer (and how) or close the connection.
"""

from __future__ import annotations

import struct

from cluster.core.protocol.codes import SerializeType
from tests.java_diff.sides import Step

OPAQUE = 424242
_I32 = struct.Struct(">i")


def frame(header: bytes, stype: int = 0, body: bytes = b"", total: int | None = None,
          header_len: int | None = None) -> bytes:
    """A frame with a given header; `total` and `header_len` override the true lengths."""
    hlen = len(header) if header_len is None else header_len
    size = 4 + len(header) + len(body) if total is None else total
    return _I32.pack(size) + struct.pack(">I", (stype << 24) | hlen) + header + body


def json_frame(text: str, body: bytes = b"") -> bytes:
    return frame(text.encode("utf-8"), body=body)


def binary_header(code: int, language: int = 0, ext: bytes = b"", remark: bytes = b"",
                  ext_len: int | None = None) -> bytes:
    fixed = struct.pack(">hBhiiI", code, language, 409, OPAQUE, 0, len(remark))
    return fixed + remark + struct.pack(">I", len(ext) if ext_len is None else ext_len) + ext


def _entry(key: str, value: str) -> bytes:
    k, v = key.encode(), value.encode()
    return struct.pack(">h", len(k)) + k + _I32.pack(len(v)) + v


CLUSTER = f'"code":106,"flag":0,"language":"JAVA","opaque":{OPAQUE},"version":409'
KV = '"extFields":{"namespace":"__malformed__","key":"k"}'

CASES: dict[str, bytes] = {
    "plain JSON header": json_frame("{" + CLUSTER + "}"),
    "trailing comma": json_frame("{" + CLUSTER + ",}"),
    "unquoted keys": json_frame(f"{{code:106,flag:0,opaque:{OPAQUE},version:409}}"),
    "single-quoted strings": json_frame(
        f"{{'code':101,'language':'JAVA','opaque':{OPAQUE},"
        "'extFields':{'namespace':'n','key':'k'}}"),
    "spaces and newlines": json_frame("{ " + CLUSTER.replace(",", ",\n ") + " }"),
    "unknown fields": json_frame("{" + CLUSTER + ',"zzz":[1,{"a":2}]}'),
    "code as a string": json_frame(f'{{"code":"106","opaque":{OPAQUE}}}'),
    "numeric extFields value": json_frame(
        f'{{"code":101,"opaque":{OPAQUE},"extFields":{{"namespace":"n","key":5}}}}'),
    "boolean extFields value": json_frame(
        f'{{"code":105,"opaque":{OPAQUE},"extFields":{{"topic":true}}}}'),
    "null extFields value": json_frame(
        f'{{"code":105,"opaque":{OPAQUE},"extFields":{{"topic":null}}}}'),
    "language number in range": json_frame(f'{{"code":106,"language":3,"opaque":{OPAQUE}}}'),
    "language number out of range": json_frame(
        f'{{"code":106,"language":99,"opaque":{OPAQUE}}}'),
    "language unknown name": json_frame(f'{{"code":106,"language":"COBOL","opaque":{OPAQUE}}}'),
    "no opaque": json_frame('{"code":101,' + KV + "}"),
    "JSON header with a body": json_frame("{" + CLUSTER + "}", body=b"ignored"),
    "header not JSON": json_frame("{{{"),
    "header a JSON array": json_frame("[1,2]"),
    "header a JSON string": json_frame('"x"'),
    "empty JSON header": json_frame(""),
    "extFields not an object": json_frame(f'{{"code":106,"opaque":{OPAQUE},"extFields":"x"}}'),
    "unknown serialize type": frame(b"{}", stype=2),
    "header length beyond the frame": frame(b"{}", header_len=100),
    "binary header": frame(binary_header(106), stype=SerializeType.ROCKETMQ),
    "binary header, language 99": frame(binary_header(106, language=99),
                                        stype=SerializeType.ROCKETMQ),
    "binary header, extFields": frame(
        binary_header(101, ext=_entry("namespace", "n") + _entry("key", "k")),
        stype=SerializeType.ROCKETMQ),
    "binary header, remark": frame(binary_header(106, remark=b"hello"),
                                   stype=SerializeType.ROCKETMQ),
    "binary header truncated": frame(binary_header(106)[:10], stype=SerializeType.ROCKETMQ),
    "binary extFields length beyond the header": frame(
        binary_header(106, ext=_entry("a", "b"), ext_len=500), stype=SerializeType.ROCKETMQ),
    "binary empty extFields value": frame(
        binary_header(105, ext=_entry("topic", "")), stype=SerializeType.ROCKETMQ),
}

# Frames whose length word itself is bad: the server cannot know where the frame ends.
LENGTH_CASES: dict[str, bytes] = {
    "negative length": _I32.pack(-8) + b"\x00" * 8,
    "length beyond frameMaxLength": _I32.pack(16 * 1024 * 1024) + b"\x00\x00\x00\x02{}",
}


def steps() -> list[Step]:
    """Each case on a fresh connection, followed by a probe (so a frame left unanswered is
    seen at once: 5.x reads nothing of a connection before its first 12 bytes, looking for a
    PROXY protocol header), then closed."""
    out = []
    for name, raw in {**CASES, **LENGTH_CASES}.items():
        conn = f"malformed {name}"
        # without an opaque, Java numbers the request from its own counter: any reply but
        # the probe's is the frame's
        opaque = OPAQUE if str(OPAQUE).encode() in raw else None
        out += [Step(name, raw=raw, raw_opaque=opaque, conn=conn, may_not_reply=True),
                Step(f"close after {name}", conn=conn, close=True, compare="none")]
    return out
