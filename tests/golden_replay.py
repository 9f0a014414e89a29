"""Replay the Java 4.9.7 golden captures through a sender and compare the replies.

The captures were taken from one live scenario, but the files are grouped by
request kind, so file order is not the order in which the Java NameServer saw
them (e.g. `12_...` asks for a route after `10`/`11` unregistered the broker).
Before some captures, BRIDGES re-create the state the capture implies — each
bridge step is itself a request sent through handle() (mostly a golden request
replayed). Replies are compared modulo opaque, version and timestamps: code,
remark and extFields exactly; bodies as parsed JSON with lists compared as sets
and the JSON flavour (quoted or bare integer keys) checked separately.

KNOWN_DIFFERENCES lists where pynamesrv answers differently on purpose; the
README's compatibility table is built from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cluster.core.protocol import body_common, register_body
from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import decode_frame
from cluster.core.protocol.lenient import loads_lenient, quote_bare_keys
from tests.unit.test_processors import request

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "reference" / "java-4.9.7-golden"
needs_golden = pytest.mark.skipif(not (GOLDEN / "index.json").exists(),
                                  reason=f"golden captures not found at {GOLDEN}")
C = "DefaultCluster"
A_MASTER, A_SLAVE, B_MASTER = "127.0.0.1:10911", "127.0.0.1:10931", "127.0.0.1:10921"

KNOWN_DIFFERENCES: dict[str, dict[str, Any]] = {
    "49_unsupported_request_code_9999": {
        "java": "no reply at all; the caller times out",
        "ours": {"code": 3, "remark": " request type 9999 not supported"},
        "reason": "5.x behaviour: every request is answered, so an unknown code fails fast "
                  "with REQUEST_CODE_NOT_SUPPORTED instead of a client-side timeout",
    },
}

Step = Callable[[], RemotingCommand]


def golden(prefix: str, kind: str = "request") -> RemotingCommand:
    return decode_frame(bytes.fromhex((GOLDEN / f"{prefix}.{kind}.hex").read_text().strip()))


def replay(prefix: str) -> Step:
    return lambda: golden(prefix)


def unregister(name: str, addr: str, broker_id: int) -> Step:
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": C, "brokerId": str(broker_id)}
    return lambda: request(104, ext, version=407)


def put_kv(ns: str, key: str, value: str) -> Step:
    return lambda: request(100, {"namespace": ns, "key": key, "value": value}, version=407)


def broker_b_later(counter: int, timestamp: int) -> Step:
    """broker-b re-registering (compressed, as in capture 05) after creating TopicB."""

    def build() -> RemotingCommand:
        first = golden("05_register_broker_compressed")
        rb = register_body.decode_register_body(first.body, True, first.version)
        topics = {**rb.topic_configs, "TopicB": register_body.topic_config(
            "TopicB", read_queue_nums=4, write_queue_nums=4)}
        body = register_body.encode_register_body({"counter": counter, "timestamp": timestamp},
                                                  topics, [], True)
        ext = {**(first.ext_fields or {}), "bodyCrc32": str(body_common.crc32_java(body))}
        return request(103, ext, body, version=407)

    return build


B_V1 = broker_b_later(1, 1795281885843)
B_V2 = broker_b_later(2, 1795281936976)
BROKER_B_GONE = unregister("broker-b", B_MASTER, 0)
BROKER_A_GONE = [replay("10_unregister_broker_master"), replay("11_unregister_broker_slave")]

BRIDGES: dict[str, list[Step]] = {
    "06_register_broker_resp_with_order_kvtable": [replay("28_put_kv_config_signed")],
    "07_query_data_version_unchanged": [B_V1],
    "09_query_data_version_stale": [B_V2],
    "12_get_routeinfo_tbw102_one_broker": [BROKER_B_GONE,
                                           replay("01_register_broker_master_first")],
    "14_get_routeinfo_topictest_master": [replay("02_register_broker_increment")],
    "15_get_routeinfo_topictest_master_slave": [replay("04_register_broker_slave_first")],
    "16_get_routeinfo_tbw102_two_brokers": [replay("05_register_broker_compressed")],
    "17_get_routeinfo_order_topic_conf": [replay("45_update_namesrv_config")],
    "18_get_routeinfo_wiped_write_perm": [replay("43_wipe_write_perm_of_broker")],
    "19_get_routeinfo_rocketmq_serialize": [replay("44_add_write_perm_of_broker")],
    "23_get_routeinfo_only_slave_left": [replay("10_unregister_broker_master")],
    "24_get_broker_cluster_info_one": [replay("11_unregister_broker_slave"), BROKER_B_GONE,
                                       replay("01_register_broker_master_first")],
    "25_get_broker_cluster_info_three": [replay("04_register_broker_slave_first"),
                                         replay("05_register_broker_compressed")],
    "27_get_broker_cluster_info_empty": [*BROKER_A_GONE, BROKER_B_GONE],
    "34_get_kvlist_by_namespace": [put_kv("probe", "k2", "v2")],
    "36_get_all_topic_list": [replay("03_register_broker_oneway"), B_V2],
}


def channel_of(cmd: RemotingCommand) -> str:
    """One channel per broker address (brokers keep one connection), one for admin clients."""
    addr = (cmd.ext_fields or {}).get("brokerAddr")
    return f"0.4242.{addr}" if cmd.code in (103, 322, 904) and addr else "0.4242.admin"


def entries() -> list[dict[str, Any]]:
    return json.loads((GOLDEN / "index.json").read_text())


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted(json.dumps(_canonical(v), sort_keys=True) for v in value)
    return value


def _body_diff(ours: bytes | None, gold: bytes | None) -> str | None:
    if (ours is None) != (gold is None):
        return f"body presence: ours {ours!r} java {gold!r}"
    if ours is None or gold is None:
        return None
    if _canonical(loads_lenient(ours)) != _canonical(loads_lenient(gold)):
        return f"body: ours {ours.decode()} java {gold.decode()}"
    if (quote_bare_keys(ours) == ours) != (quote_bare_keys(gold) == gold):
        return f"JSON flavour: ours {ours.decode()} java {gold.decode()}"
    return None


def _ext(cmd: RemotingCommand) -> dict[str, str] | None:
    if cmd.serialize_type == SerializeType.ROCKETMQ and not cmd.ext_fields:
        return None  # the binary header cannot tell an empty map from none
    return cmd.ext_fields


def compare(ours: RemotingCommand, gold: RemotingCommand) -> list[str]:
    diffs = []
    if (ours.code, ours.remark) != (gold.code, gold.remark):
        diffs.append(f"code/remark: ours {(ours.code, ours.remark)} "
                     f"java {(gold.code, gold.remark)}")
    if _ext(ours) != _ext(gold):
        diffs.append(f"extFields: ours {ours.ext_fields} java {gold.ext_fields}")
    if ours.serialize_type != gold.serialize_type:
        diffs.append(f"serialize type: ours {ours.serialize_type} java {gold.serialize_type}")
    body = _body_diff(ours.body, gold.body)
    return diffs + ([body] if body else [])


Send = Callable[[RemotingCommand, str], "RemotingCommand | None"]


def run_bridge(send: Send, prefix: str) -> None:
    for step in BRIDGES.get(prefix, []):
        cmd = step()
        reply = send(cmd, channel_of(cmd))
        assert reply is None or reply.code == 0, f"bridge before {prefix}: {reply}"


def check_one(send: Send, entry: dict[str, Any]) -> list[str]:
    prefix = entry["file_prefix"]
    run_bridge(send, prefix)
    cmd = golden(prefix)
    reply = send(cmd, channel_of(cmd))
    if prefix in KNOWN_DIFFERENCES:
        want = KNOWN_DIFFERENCES[prefix]["ours"]
        got = None if reply is None else {"code": reply.code, "remark": reply.remark}
        return [] if got == want else [f"{prefix}: documented {want}, got {got}"]
    if entry["response"] is None:
        return [] if reply is None else [f"{prefix}: java sent no reply, we sent {reply}"]
    if reply is None:
        return [f"{prefix}: no reply"]
    return [f"{prefix}: {d}" for d in compare(reply, golden(prefix, "response"))]


def replay_all(send: Send) -> list[str]:
    """Every capture in order; returns the differences found (empty when all match)."""
    all_entries = entries()
    assert len(all_entries) == 48
    return [d for entry in all_entries for d in check_one(send, entry)]
