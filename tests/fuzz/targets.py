"""Fuzz targets, seeds and mutations shared by the hypothesis tests, the fuzz harness
(``python -m tests.fuzz.run``) and the live mutation test.

Every codec entry point has a documented error type: the frame reader and the header
decoders raise :class:`FrameError`, the body decoders :class:`BodyError`, the
properties parser :class:`PropertiesError` and ``loads_lenient`` ``ValueError``.
Anything else escaping one of them on hostile input is a bug; :func:`run_input`
raises :class:`Escaped` for it, naming the entry point.
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cluster.client.admin_requests import decode_member_group
from cluster.core.protocol import (
    admin_bodies,
    body_common,
    register_body,
    register_scan,
    route_bodies,
)
from cluster.core.protocol.body_common import BodyError
from cluster.core.protocol.codes import LANGUAGES, SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import (
    FrameError,
    FrameReader,
    decode_command,
    decode_frame,
    encode_command,
    split_frame,
)
from cluster.core.protocol.lenient import loads_lenient
from cluster.core.protocol.properties import PropertiesError, parse_properties

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
GOLDEN = SHARED / "reference" / "java-4.9.7-golden"
CLIENT_CAPTURES = SHARED / "captures" / "client-requests.jsonl"
VERSIONS = (0, 36, 37, 400, 413)  # each side of V3_0_11 and V5_0_0
NOW_MS = 1_700_000_000_000


class Escaped(Exception):  # noqa: N818 - it is what the harness reports: an escape
    """An exception other than the entry point's documented one escaped it."""

    def __init__(self, entry: str, exc: BaseException) -> None:
        super().__init__(f"{entry}: {type(exc).__name__}: {exc}")
        self.entry = entry
        self.exc = exc


def guard(entry: str, allowed: tuple[type[BaseException], ...], fn: Callable[[], Any]) -> Any:
    """``fn()``; None when it raised an allowed error; :class:`Escaped` for anything else."""
    try:
        return fn()
    except allowed:
        return None
    except Exception as exc:  # the point of fuzzing: anything undocumented is a finding
        raise Escaped(entry, exc) from exc


# ------------------------------------------------------------------ seeds


def golden_frames() -> list[bytes]:
    """Every captured frame (length word included): Java 4.9.7 requests and replies,
    then what six clients send. Empty when the captures are not checked out."""
    frames = [bytes.fromhex(p.read_text().strip()) for p in sorted(GOLDEN.glob("*.hex"))]
    if CLIENT_CAPTURES.is_file():
        for line in CLIENT_CAPTURES.read_text().splitlines():
            if line.strip():
                frames.append(bytes.fromhex(json.loads(line)["hex"]))
    return frames


def _dv() -> dict[str, int]:
    return {"counter": 3, "timestamp": 1_700_000_000_123}


def synthetic_bodies() -> list[bytes]:
    """One body of each shape the decoders read, made with the project's encoders."""
    topics = {
        "TopicTest": register_body.topic_config("TopicTest", read_queue_nums=4, write_queue_nums=4),
        "Ordered": register_body.topic_config("Ordered", order=True, attributes={"+a": "b"}),
    }
    route: dict[str, Any] = {
        "brokerDatas": [{"brokerAddrs": {0: "127.0.0.1:10911", 1: "127.0.0.1:10912"},
                         "brokerName": "broker-a", "cluster": "DefaultCluster"}],
        "filterServerTable": {"127.0.0.1:10911": ["127.0.0.1:30000"]},
        "orderTopicConf": "broker-a:4",
        "queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 4,
                        "topicSysFlag": 0, "writeQueueNums": 4}],
    }
    return [
        register_body.encode_register_body(_dv(), topics, ["127.0.0.1:30000"], False),
        register_body.encode_register_body(_dv(), topics, None, False, with_attributes=True),
        route_bodies.encode_topic_route(route, False),
        route_bodies.encode_topic_route(route, True),
        route_bodies.encode_cluster_info(
            {"broker-a": route["brokerDatas"][0]}, {"DefaultCluster": ["broker-a"]}),
        admin_bodies.encode_kv_table({"TopicTest": "broker-a:4", "k": "v"}),
        admin_bodies.encode_topic_list(["TopicTest", "Ordered"], "127.0.0.1:10911"),
        body_common.encode_data_version(_dv()),
        route_bodies.encode_broker_member_group("DefaultCluster", "broker-a",
                                                {0: "127.0.0.1:10911"}),
        b"listenPort=9876\nkey\\u0041=va\\\n  lue\n# comment\n",
        b"{topicConfigSerializeWrapper:{dataVersion:{counter:1,timestamp:2},"
        b"topicConfigTable:{'T':{topicName:'T',perm:6,,}}},filterServerList:[]}",
    ]


def compressed_plaintexts() -> list[bytes]:
    """The inflated form of compressed REGISTER_BROKER bodies (4.9 and 5.x layouts)."""
    topics = {"TopicTest": register_body.topic_config("TopicTest"),
              "A": register_body.topic_config("A", attributes={"+k": "v"})}
    plain = [zlib.decompress(register_body.encode_register_body(_dv(), topics, ["f:1"], True)),
             zlib.decompress(register_body.encode_register_body(_dv(), topics, None, True,
                                                                with_attributes=True))]
    mapping = b'{"topic":"A","scope":"s","totalQueues":1}'
    plain.append(plain[1] + struct.pack(">i", 1) + struct.pack(">i", len(mapping)) + mapping)
    return plain


def synthetic_frames() -> list[bytes]:
    """Frames in both header encodings, so the seeds cover the binary header and a
    compressed registration even without the captures."""
    out: list[bytes] = []
    ext = {"topic": "TopicTest", "brokerName": "broker-a", "compressed": "false"}
    for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
        for body in (None, *synthetic_bodies()[:3]):
            out.append(encode_command(RemotingCommand(
                code=103, opaque=7, flag=0, version=400, language="JAVA", remark="r",
                ext_fields=ext, body=body, serialize_type=stype)))
        out.append(encode_command(RemotingCommand(
            code=0, opaque=8, flag=1, version=409, language="GO", remark=None,
            ext_fields=None, serialize_type=stype)))
        compressed = register_body.encode_register_body(
            _dv(), {"T": register_body.topic_config("T")}, [], True)
        out.append(encode_command(RemotingCommand(
            code=103, opaque=9, version=413, ext_fields={**ext, "compressed": "true"},
            body=compressed, serialize_type=stype)))
    return out


def seed_frames() -> list[bytes]:
    return golden_frames() + synthetic_frames()


def seed_bodies() -> list[bytes]:
    """Bodies of every seed frame, plus the synthetic ones."""
    found = []
    for frame in seed_frames():
        try:
            body = decode_frame(frame).body
        except FrameError:
            continue
        if body:
            found.append(body)
    return found + synthetic_bodies()


# ------------------------------------------------------------------ entry points


def run_body_decoders(body: bytes | None, compressed: bool | None = None,
                      versions: Sequence[int] = VERSIONS) -> None:
    """Every body decoder on ``body``; raises :class:`Escaped` on an undocumented error.
    ``compressed`` None tries both readings of a REGISTER_BROKER body."""
    flags = (False, True) if compressed is None else (compressed,)
    be = (BodyError,)
    for version in versions:
        for flag in flags:
            guard("decode_register_body", be, partial(
                register_body.decode_register_body, body, flag, version, now_ms=NOW_MS))
            guard("decode_register_queues", be, partial(
                register_body.decode_register_queues, body, flag, version, now_ms=NOW_MS))
            head = guard("register_head", (), partial(
                register_body.register_head, body, flag, version, now_ms=NOW_MS))
            if head is not None and body is not None:
                guard("topic_table_digest", (),
                      partial(register_scan.topic_table_digest, body, head))
    for name, decoder in BODY_DECODERS:
        guard(name, be, partial(decoder, body))
    if body:
        guard("decode_member_group", be, lambda: decode_member_group(body))
        guard("loads_lenient", (ValueError,), lambda: loads_lenient(body))
        for encoding in ("latin-1", "utf-8"):
            text = body.decode(encoding, "replace")
            guard("parse_properties", (PropertiesError,), partial(parse_properties, text))


BODY_DECODERS: tuple[tuple[str, Callable[[bytes | None], Any]], ...] = (
    ("decode_topic_route", route_bodies.decode_topic_route),
    ("decode_cluster_info", route_bodies.decode_cluster_info),
    ("decode_kv_table", admin_bodies.decode_kv_table),
    ("decode_topic_list", admin_bodies.decode_topic_list),
    ("decode_data_version", lambda b: body_common.decode_data_version(b, now_ms=NOW_MS)),
    ("decode_register_result_body", admin_bodies.decode_register_result_body),
)


def check_command(cmd: RemotingCommand) -> None:
    """What a decoded command promises: typed fields, and it encodes again in its own
    header encoding to a frame that decodes to the same command."""
    assert type(cmd.code) is int and type(cmd.opaque) is int, cmd
    assert type(cmd.flag) is int and type(cmd.version) is int, cmd
    assert cmd.language is None or cmd.language in LANGUAGES, cmd
    assert cmd.remark is None or type(cmd.remark) is str, cmd
    assert cmd.body is None or (type(cmd.body) is bytes and cmd.body), cmd
    if cmd.ext_fields is not None:
        assert all(type(k) is str and type(v) is str for k, v in cmd.ext_fields.items()), cmd
    if cmd.serialize_type is SerializeType.JSON:
        again = guard("encode_command", (), lambda: encode_command(cmd))
        back = guard("decode_frame(encode_command(cmd))", (), lambda: decode_frame(again))
        assert back == cmd, (back, cmd)


def run_decode(frame: bytes, with_bodies: bool = True) -> RemotingCommand | None:
    """``decode_command`` on a frame without its length word, then its body."""
    cmd: RemotingCommand | None = guard("decode_command", (FrameError,),
                                        lambda: decode_command(frame))
    guard("split_frame", (FrameError,), lambda: split_frame(frame))
    if cmd is None:
        return None
    check_command(cmd)
    if with_bodies:
        compressed = (cmd.field("compressed") or "").lower() == "true"
        run_body_decoders(cmd.body, compressed, (max(min(cmd.version, 1000), -1),))
    return cmd


def chunk_sizes(pattern: int, total: int) -> list[int]:
    """A deterministic chunking of ``total`` bytes chosen by ``pattern``."""
    rng = random.Random(pattern)
    sizes, left = [], total
    while left > 0:
        n = min(left, rng.choice((1, 2, 3, 4, 5, 7, 8, 13, 64, 1000, left)))
        sizes.append(n)
        left -= n
    return sizes


def run_stream(data: bytes, sizes: Iterable[int], max_frame: int = 1 << 16,
               with_bodies: bool = True) -> list[bytes]:
    """Feed ``data`` to a FrameReader in chunks; decode every frame it returns. Returns
    the frames split before the reader raised FrameError (if it did)."""
    reader = FrameReader(max_frame)
    frames: list[bytes] = []
    pos = 0
    for n in sizes:
        chunk = data[pos : pos + n]
        pos += n
        got = guard("FrameReader.feed", (FrameError,), partial(reader.feed, chunk))
        if got is None:
            break
        for frame in got:
            frames.append(frame)
            run_decode(frame, with_bodies)
    return frames


def run_input(data: bytes) -> None:
    """One fuzz input: its first byte picks the entry point (``byte % 6``) and a parameter
    (``byte // 6``: chunking or request version); the rest is the payload."""
    if not data:
        return
    kind, param = divmod(data[0], 6)[::-1]
    payload = data[1:]
    if kind == 0:
        run_stream(payload, chunk_sizes(param, len(payload)))
    elif kind == 1:
        run_decode(payload)
    elif kind == 2:
        guard("decode_frame", (FrameError,), lambda: decode_frame(payload))
    elif kind == 3:
        run_body_decoders(payload, False, (VERSIONS[param % len(VERSIONS)],))
    elif kind == 4:
        body = zlib.compress(payload, 1)  # the inflated layout is what is worth mutating
        run_body_decoders(body, True, (VERSIONS[3 + param % 2],))
    else:
        guard("loads_lenient", (ValueError,), lambda: loads_lenient(payload))
        guard("parse_properties", (PropertiesError,),
              lambda: parse_properties(payload.decode("latin-1")))


def input_byte(kind: int, param: int = 0) -> bytes:
    return bytes([kind + 6 * param])


def seed_inputs() -> list[bytes]:
    """The harness's starting corpus: every captured frame in each input kind."""
    out: list[bytes] = []
    for frame in seed_frames():
        out.append(input_byte(0) + frame)
        out.append(input_byte(1) + frame[4:])
    for body in seed_bodies():
        out.append(input_byte(3, VERSIONS.index(400)) + body)
        out.append(input_byte(5) + body)
    for plain in compressed_plaintexts():
        out += [input_byte(4, 0) + plain, input_byte(4, 1) + plain]
    out.append(input_byte(3, VERSIONS.index(36)) + synthetic_bodies()[-1])
    return out


# ------------------------------------------------------------------ mutations


@dataclass(frozen=True)
class Op:
    """One mutation: ``kind`` picks it, ``at`` and ``value`` parameterize it."""

    kind: int
    at: int
    value: int


MUTATIONS = ("bit_flip", "truncate", "length_lie", "header_type_flip", "giant_length",
             "header_length_lie", "garbage", "insert", "delete", "overwrite_int", "duplicate")


def mutate(frame: bytes, ops: Iterable[Op]) -> bytes:
    """Apply ``ops`` to a frame (with its length word)."""
    buf = bytearray(frame)
    for op in ops:
        kind = MUTATIONS[op.kind % len(MUTATIONS)]
        n = len(buf)
        at = op.at % (n + 1)
        if kind == "bit_flip" and n:
            buf[at % n] ^= 1 << (op.value % 8)
        elif kind == "truncate":
            del buf[at:]
        elif kind == "length_lie" and n >= 4:
            struct.pack_into(">i", buf, 0, (n - 4 + (op.value % 33) - 16))
        elif kind == "header_type_flip" and n >= 5:
            buf[4] = op.value % 256
        elif kind == "giant_length" and n >= 4:
            struct.pack_into(">I", buf, 0, (0x7FFFFFFF, 0xFFFFFFFF, 0x01000000, 0x00FFFFFC,
                                            0x80000000)[op.value % 5])
        elif kind == "header_length_lie" and n >= 8:
            buf[5:8] = (op.value % (1 << 24)).to_bytes(3, "big")
        elif kind == "garbage":
            buf[at:at] = random.Random(op.value).randbytes(op.value % 64 + 1)
        elif kind == "insert":
            buf[at:at] = bytes([op.value % 256])
        elif kind == "delete" and n:
            del buf[at % n]
        elif kind == "overwrite_int" and n >= 4:
            pos = at % (n - 3)
            buf[pos : pos + 4] = (op.value & 0xFFFFFFFF).to_bytes(4, "big")
        elif kind == "duplicate" and n:
            buf[at:at] = buf[at % n : at % n + op.value % 256]
    return bytes(buf)


def random_ops(rng: random.Random, max_ops: int = 3) -> list[Op]:
    return [Op(rng.randrange(len(MUTATIONS)), rng.randrange(1 << 20), rng.randrange(1 << 32))
            for _ in range(rng.randint(1, max_ops))]
