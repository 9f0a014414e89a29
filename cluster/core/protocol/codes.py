"""RocketMQ remoting constants: request codes, response codes, flags, languages."""

from __future__ import annotations

from enum import IntEnum


class SerializeType(IntEnum):
    JSON = 0
    ROCKETMQ = 1


class RequestCode(IntEnum):
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_NAMESRV = 216
    REGISTER_TOPIC_IN_NAMESRV = 217
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    QUERY_DATA_VERSION = 322
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_BROKER_MEMBER_GROUP = 901
    BROKER_HEARTBEAT = 904
    # pynamesrv extension, outside the range RocketMQ uses: a consistent
    # point-in-time snapshot of one node's tables (see README "Snapshots").
    GET_NODE_SNAPSHOT = 60001
    # pynamesrv extension: digests of the node's tables, with drill-down on mismatch
    # (docs/architecture.md "Digest request").
    GET_NODE_DIGEST = 60002


# pynamesrv extension: the extField a monitoring request names its sender in, so a node
# counts it apart from client traffic (``pynamesrv_requests_total{origin}``); any other
# value, or none, counts as ``client``.
ORIGIN_FIELD = "pynamesrvOrigin"
ORIGINS = frozenset({"probe", "status", "audit", "addr"})
CLIENT_ORIGIN = "client"


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    QUERY_NOT_FOUND = 22
    GO_AWAY = 1500


FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

# LanguageCode byte values (same in 4.9 and 5.x).
LANGUAGES: tuple[str, ...] = (
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST",
)
LANGUAGE_BY_NAME: dict[str, int] = {name: i for i, name in enumerate(LANGUAGES)}

# MQVersion ordinals that change NameServer behaviour.
V3_0_11 = 37  # RegisterBrokerBody instead of a bare TopicConfigSerializeWrapper
V4_9_4 = 401  # standard-JSON route replies
V5_0_0 = 413  # compressed body carries the static-topic section
V5_3_1 = 475  # a client newer than this understands GO_AWAY
V5_5_0 = 513  # the 5.x release pynamesrv follows; what its replies carry

# Version 4.9.8 writes in its replies (5.x: `dialect.Dialect.reply_version`).
SERVER_VERSION = 409
DEFAULT_MAX_FRAME = 16 * 1024 * 1024  # Netty compares total + 4 against this
