"""GET/UPDATE_NAMESRV_CONFIG against the real Java NameServer 4.9.8 (marker ``java``).

A fresh Java NameServer and a fresh pynamesrv node must answer GET_NAMESRV_CONFIG
with the same bytes once the values that differ by construction (paths, ports) are
normalised: same keys, same value formats, same order. Updates of Java's keys are
answered alike and leave the answers equal.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.properties import parse_properties
from tests.javaproc import JAVA_ROCKETMQ, JavaNamesrv, java_rocketmq_missing
from tests.nodeproc import Conn, NodeProcess, free_port

MISSING = java_rocketmq_missing()
pytestmark = [pytest.mark.java, pytest.mark.skipif(bool(MISSING), reason=MISSING)]
TIMEOUT_S = 30.0
PATH_KEYS = ("kvConfigPath", "configStorePath", "rocketmqHome")
# Keys Java does not know, added to both servers' config files: 10 of them make Java's
# Properties grow twice (to 32 bins for the file, to 64 for the whole configuration).
USER_KEYS = {f"userKey{i}": f"v{i}" for i in range(10)}


class Servers:
    def __init__(self, java: JavaNamesrv, node: NodeProcess) -> None:
        self.java = Conn(java.addr, timeout=TIMEOUT_S)
        self.node = Conn(node.addr, timeout=TIMEOUT_S)
        self.ports = {"java": java.port, "node": node.port}

    def get(self, side: str, ext: dict[str, str] | None = None) -> str:
        conn = self.java if side == "java" else self.node
        reply = conn.call(RemotingCommand(code=RequestCode.GET_NAMESRV_CONFIG, version=409,
                                          ext_fields=ext))
        assert reply.code == 0 and reply.body is not None, (side, reply)
        return reply.body.decode("utf-8")

    def normalised(self, side: str, ext: dict[str, str] | None = None) -> str:
        """The answer with paths and the port replaced after checking their format."""
        lines = []
        for line in self.get(side, ext).splitlines(keepends=True):
            key, value = line.rstrip("\n").split("=", 1)
            if key in PATH_KEYS:
                assert Path(value).is_absolute(), (side, line)
                value = "<path>"
            elif key == "listenPort":
                assert value == str(self.ports[side]), (side, line)
                value = "<port>"
            lines.append(f"{key}={value}\n")
        return "".join(lines)

    def update(self, body: bytes) -> dict[str, tuple[int, str | None]]:
        out = {}
        for side, conn in (("java", self.java), ("node", self.node)):
            reply = conn.call(RemotingCommand(code=RequestCode.UPDATE_NAMESRV_CONFIG,
                                              version=409, body=body))
            out[side] = (reply.code, reply.remark)
        return out

    def close(self) -> None:
        self.java.close()
        self.node.close()


def start(stack: ExitStack, tmp_path: Path, extra: dict[str, str]) -> Servers:
    java = JavaNamesrv(tmp_path / "java")
    stack.callback(java.stop)
    java.start()
    node_dir, port = tmp_path / "node", free_port()
    # the node's file holds what run-namesrv.sh writes into Java's, in the same order
    node = NodeProcess(node_dir, port=port, name="cfg", props={
        "listenPort": str(port), "rocketmqHome": str(JAVA_ROCKETMQ),
        "kvConfigPath": str(node_dir / "kvConfig.json"),
        "configStorePath": str(node_dir / "namesrv.properties"), **extra})
    stack.callback(node.stop)
    node.start()
    servers = Servers(java, node)
    stack.callback(servers.close)
    return servers


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    with ExitStack() as stack:
        yield start(stack, tmp_path, {})


def java_appending(tmp_path: Path, lines: str) -> Path:
    """A `java` that appends `lines` to its `-c` file first (run-namesrv.sh writes that file)."""
    real = os.environ.get("JAVA") or shutil.which("java")
    assert real, "no java"
    extra = tmp_path / "extra.properties"
    extra.write_text(lines)
    script = tmp_path / "java-with-extra-keys"
    script.write_text('#!/bin/sh\nprev=""\nfor a in "$@"; do\n'
                      f'  [ "$prev" = "-c" ] && cat "{extra}" >> "$a"\n  prev=$a\ndone\n'
                      f'exec "{real}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_fresh_answers_are_the_same_bytes(servers: Servers) -> None:
    java = servers.normalised("java")
    assert servers.normalised("node") == java
    assert len(java.splitlines()) == 21


def test_all_true_is_ignored_by_java_and_adds_pynamesrv_settings(servers: Servers) -> None:
    assert servers.get("java", {"all": "true"}) == servers.get("java")
    everything = parse_properties(servers.get("node", {"all": "true"}))
    assert set(parse_properties(servers.get("java"))) < set(everything)
    assert {"ioWorkers", "brokerChannelExpiredTime", "nodeName"} <= set(everything)


@pytest.mark.parametrize("body", [
    b"serverWorkerThreads=16\nclusterTest=true\nproductEnvName=test\norderMessageEnable=true\n",
    b"serverChannelMaxIdleTimeSeconds=60\nuseEpollNativeSelector=true\n",
    b"unknownKey=value\n",
    b"kvConfigPath=/tmp/elsewhere\n",
    b"configBlackList=\n",
    b"rocketmqHome=/tmp/elsewhere\norderMessageEnable=true\n",
])
def test_updates_of_java_keys_are_answered_alike(servers: Servers, body: bytes) -> None:
    outcome = servers.update(body)
    assert outcome["node"] == outcome["java"]
    assert servers.normalised("node") == servers.normalised("java")


def test_unknown_file_keys_take_java_places(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    lines = "".join(f"{k}={v}\n" for k, v in USER_KEYS.items())
    monkeypatch.setenv("JAVA", str(java_appending(tmp_path, lines)))
    with ExitStack() as stack:
        servers = start(stack, tmp_path, USER_KEYS)
        java = servers.normalised("java")
        assert set(USER_KEYS) <= set(parse_properties(java))
        assert servers.normalised("node") == java
