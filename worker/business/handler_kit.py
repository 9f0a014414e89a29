"""What the request processors of both releases share: header fields read as Java reads
them, replies, and a REGISTER_BROKER body read only as far as the registration needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster.core.protocol import admin_bodies, body_common, register_body, register_scan
from cluster.core.protocol.admin_bodies import ORDER_TOPIC_CONFIG
from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.command import RemotingCommand, java_int, response_to
from cluster.core.protocol.mapping_body import plain_mappings
from state import kvconfig, nsconfig
from state.applied import TopicTable

RC = ResponseCode


class MissingField(ValueError):
    """A header field the handler needs is absent (Java fails with a NullPointerException)."""


def field(cmd: RemotingCommand, name: str) -> str:
    value = cmd.field(name)
    if value is None:
        raise MissingField(f"header field {name} is null")
    return value


def long_field(cmd: RemotingCommand, name: str) -> int:
    return int(field(cmd, name))


def flag(cmd: RemotingCommand, name: str) -> bool:
    """Java Boolean.parseBoolean of an optional header field."""
    return (cmd.field(name) or "").lower() == "true"


def jstr(value: str | None) -> str:
    return "null" if value is None else value


def ok(cmd: RemotingCommand, ext: dict[str, str] | None = None,
       body: bytes | None = None) -> RemotingCommand:
    return response_to(cmd, RC.SUCCESS, ext_fields=ext, body=body)


def present(values: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in values.items() if v is not None}


def _register_body(cmd: RemotingCommand, now: int) -> register_body.RegisterBody:
    body = None if cmd.body is None else bytes(cmd.body)  # the full decode wants bytes
    return register_body.decode_register_body(body, compressed(cmd), cmd.version, now_ms=now)


def compressed(cmd: RemotingCommand) -> bool:
    """The header says so, or the body is a zlib stream: a 5.x broker with
    compressedRegister=true sends compressed=false (README, compatibility table)."""
    return register_body.is_compressed(flag(cmd, "compressed"), cmd.body)


def crc_ok(cmd: RemotingCommand) -> bool:
    """Java's check: a bodyCrc32 that is not an int32 (Integer.parseInt fails) stays 0,
    and 0 disables the check."""
    expected = java_int(cmd.field("bodyCrc32")) or 0
    return expected == 0 or expected == body_common.crc32_java(cmd.body or b"")


def order_kv_body(t: Any, five: bool = False) -> bytes | None:
    if not nsconfig.get_bool(t, "returnOrderTopicConfigToBroker"):
        return None
    table = kvconfig.get_namespace(t, ORDER_TOPIC_CONFIG)
    return None if table is None else admin_bodies.encode_kv_table(table, five)


@dataclass(slots=True)
class BodyParts:
    """What a REGISTER_BROKER body holds: DataVersion, filter servers, the topic table (read
    lazily) and static-topic mapping infos (5.x)."""

    data_version: dict[str, int]
    filters: list[str] | None
    table: TopicTable
    mappings: dict[str, dict[str, Any]]


def registration_body(cmd: RemotingCommand, now: int) -> BodyParts:
    """The parts of a REGISTER_BROKER body. A body in fastjson's layout is read only up to
    its DataVersion: its topic table is decoded on first use, which the caller arranges
    before the write lock when the registration will apply it, and not at all when it will
    not (slave, unchanged DataVersion, already applied)."""
    body = cmd.body
    head = register_body.register_head(body, compressed(cmd), cmd.version, now_ms=now)
    if head is None or body is None:
        rb = _register_body(cmd, now)
        mappings = rb.mappings if compressed(cmd) else plain_mappings(body)
        return BodyParts(rb.data_version, rb.filter_servers,
                         TopicTable.of_configs(rb.topic_configs), mappings)
    return BodyParts(head.data_version, head.filter_servers,
                     _lazy_table(body, cmd.version, now, head), plain_mappings(body))


def _lazy_table(body: bytes | memoryview, version: int, now: int, head: register_body.RegisterHead
                ) -> TopicTable:
    return TopicTable.of_plain(register_scan.PlainTable(body, head, version, now),
                                     lambda: register_scan.topic_table_digest(body, head))


