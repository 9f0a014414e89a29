"""Test support: a NameServer on a loopback port that answers from a tables dict.

``FakeNameServer(tables, kind)`` answers the read codes the audit uses the way each
NameServer does: ``pynamesrv`` answers GET_NODE_SNAPSHOT (60001) and lists its own
settings in GET_NAMESRV_CONFIG; ``java4`` never answers 60001 (4.9.x has no reply for a
code it does not know); ``java5`` answers it REQUEST_CODE_NOT_SUPPORTED. ``mute`` accepts
connections and answers nothing. Connections are persistent and pipelined, one thread
each; every request code is recorded in ``requests``. ``tables`` may be changed while
it serves (under ``lock``).
"""

from __future__ import annotations

import socket
import threading
from collections import Counter
from typing import Any

import orjson

from cluster.core.protocol import admin_bodies, route_bodies
from cluster.core.protocol.codes import ORIGIN_FIELD, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.frame import FrameReader, decode_command, encode_command

RQ = RequestCode
JAVA_CONFIG = (b"listenPort=9876\nkvConfigPath=/root/namesrv/kvConfig.json\n"
               b"orderMessageEnable=false\n")
PYNAMESRV_CONFIG = JAVA_CONFIG + b"ioWorkers=1\nbusinessWorkers=2\n"


class FakeNameServer:
    def __init__(self, tables: dict[str, Any], kind: str = "pynamesrv",
                 mute: bool = False) -> None:
        self.tables = tables
        self.kind = kind
        self.mute = mute
        self.lock = threading.Lock()
        self.requests: Counter[int] = Counter()
        self.origins: Counter[str | None] = Counter()  # the pynamesrvOrigin extField of each
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            if not self.mute:
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = FrameReader()
        try:
            while data := conn.recv(65536):
                for frame in reader.feed(data):
                    reply = self.answer(decode_command(frame))
                    if reply is not None:
                        conn.sendall(encode_command(reply))
        except OSError:
            return

    def answer(self, cmd: RemotingCommand) -> RemotingCommand | None:
        with self.lock:
            self.requests[cmd.code] += 1
            self.origins[cmd.field(ORIGIN_FIELD)] += 1
            return self._reply(cmd)

    def _reply(self, cmd: RemotingCommand) -> RemotingCommand | None:
        t = self.tables
        ok = ResponseCode.SUCCESS
        if cmd.code == RQ.GET_NODE_SNAPSHOT and self.kind == "pynamesrv":
            snapshot = {"node": "fake", "seq": 1, "takenAt": 1, "tables": t}
            return response_to(cmd, ok, body=orjson.dumps(snapshot))
        if cmd.code == RQ.GET_NAMESRV_CONFIG:
            config = PYNAMESRV_CONFIG if self.kind == "pynamesrv" else JAVA_CONFIG
            return response_to(cmd, ok, body=config)
        if cmd.code == RQ.GET_BROKER_CLUSTER_INFO:
            brokers = {n: {"cluster": b["cluster"], "brokerName": n,
                           "brokerAddrs": {int(k): a for k, a in b["brokerAddrs"].items()}}
                       for n, b in t.get("broker", {}).items()}
            return response_to(cmd, ok, body=route_bodies.encode_cluster_info(
                brokers, t.get("cluster", {})))
        if cmd.code == RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
            return response_to(cmd, ok, body=admin_bodies.encode_topic_list(t.get("topic", {})))
        if cmd.code == RQ.GET_ROUTEINFO_BY_TOPIC:
            return self._route(cmd)
        if cmd.code == RQ.GET_KVLIST_BY_NAMESPACE:
            table = t.get("kv", {}).get(cmd.field("namespace") or "")
            if not table:
                return response_to(cmd, ResponseCode.QUERY_NOT_FOUND, "no such namespace")
            return response_to(cmd, ok, body=admin_bodies.encode_kv_table(table))
        if self.kind == "java4":
            return None  # 4.9.x: no reply to a code it does not know
        return response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                           f" request type {cmd.code} not supported")

    def _route(self, cmd: RemotingCommand) -> RemotingCommand:
        queues = self.tables.get("topic", {}).get(cmd.field("topic") or "")
        brokers = self.tables.get("broker", {})
        known = [n for n in (queues or {}) if n in brokers]
        if not known:
            return response_to(cmd, ResponseCode.TOPIC_NOT_EXIST, "No topic route info")
        route = {"brokerDatas": [{"cluster": brokers[n]["cluster"], "brokerName": n,
                                  "brokerAddrs": {int(k): a for k, a in
                                                  brokers[n]["brokerAddrs"].items()}}
                                 for n in known],
                 "filterServerTable": {},
                 "queueDatas": [{"brokerName": n, **q} for n, q in (queues or {}).items()]}
        return response_to(cmd, ResponseCode.SUCCESS,
                           body=route_bodies.encode_topic_route(route, standard=True))

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(5)
        for c in self._conns:
            c.close()


def tables(brokers: dict[str, list[str]], kv: dict[str, dict[str, str]] | None = None,
           cluster: str = "DefaultCluster") -> dict[str, Any]:
    """Snapshot tables of ``{brokerName: [topics]}``: one master each at 10.0.0.<i>:10911."""
    broker: dict[str, dict[str, Any]] = {
        n: {"cluster": cluster, "brokerAddrs": {"0": f"10.0.0.{i + 1}:10911"}}
        for i, n in enumerate(brokers)}
    topic: dict[str, dict[str, Any]] = {}
    for n, topics in brokers.items():
        for name in topics:
            topic.setdefault(name, {})[n] = {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0,
                                             "writeQueueNums": 4}
    return {"cluster": {cluster: sorted(brokers)} if brokers else {}, "broker": broker,
            "topic": topic, "filter": {},
            "live": {b["brokerAddrs"]["0"]: {"dataVersion": {"counter": 1, "timestamp": 1},
                                             "haServerAddr": None} for b in broker.values()},
            "kv": kv or {}}
