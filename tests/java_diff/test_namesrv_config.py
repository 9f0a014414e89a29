"""GET/UPDATE_NAMESRV_CONFIG against the real Java NameServers (marker ``java``).

A fresh Java NameServer and a fresh pynamesrv node must answer GET_NAMESRV_CONFIG
with the same bytes once the values that differ by construction (paths, ports) are
normalised: same keys, same value formats, same order. Updates of Java's keys are
answered alike and leave the answers equal. Against a release in `RECORDED` the
differences are recorded in the report's table instead of failing.

The 4.9 line's NameServer on Maven Central is 4.9.7; the node follows 4.9.8, which
added the config black list (`configBlackList` in the answer; UPDATE of a black-listed
key refused with "Can not update config in black list."). Against 4.9.7 that one
difference is README's compatibility row "config black list (4.9.8; 4.9.7 oracle)" and
is checked in its exact shape.
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
from tests.java_diff import record
from tests.java_diff.conftest import NODE_SETTINGS, RECORDED
from tests.java_diff.marks import JAVA
from tests.javaproc import JavaNamesrv
from tests.nodeproc import Conn, NodeProcess, free_port

pytestmark = JAVA
TIMEOUT_S = 30.0
PATH_KEYS = ("kvConfigPath", "configStorePath", "rocketmqHome")
# Keys Java does not know, added to both servers' config files: 10 of them make Java's
# Properties grow twice (to 32 bins for the file, to 64 for the whole configuration).
BLACK_LIST_REFUSAL = (16, "Can not update config in black list.")
USER_KEYS = {f"userKey{i}": f"v{i}" for i in range(10)}


class Servers:
    def __init__(self, java: JavaNamesrv, node: NodeProcess, release: str) -> None:
        self.java = Conn(java.addr, timeout=TIMEOUT_S)
        self.node = Conn(node.addr, timeout=TIMEOUT_S)
        self.ports = {"java": java.port, "node": node.port}
        self.release = release
        self.java_home = str(java.workdir)

    def same(self, what: str, java: object, ours: object) -> bool:
        """Assert ``java == ours``; against a recorded release, record a difference."""
        if java == ours:
            return True
        if self.release in RECORDED:
            fields, java_text, ours_text = _config_difference(java, ours)
            record.add(record.Difference(self.release, "GET/UPDATE_NAMESRV_CONFIG", what,
                                         fields, java_text, ours_text))
            return False
        assert ours == java, what
        return True

    def without_black_list(self, text: str) -> str:
        """4.9.7 has no ``configBlackList`` key (the config black list came with 4.9.8)."""
        if self.release != "4.9":
            return text
        return "".join(line for line in text.splitlines(keepends=True)
                       if not line.startswith("configBlackList="))

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


def _config_difference(java: object, ours: object) -> tuple[str, str, str]:
    """What differs between two answers, key by key when both are config texts."""
    if not (isinstance(java, str) and isinstance(ours, str)):
        return "reply", repr(java), repr(ours)
    jp, op = parse_properties(java), parse_properties(ours)
    only_java = sorted(set(jp) - set(op))
    only_ours = sorted(set(op) - set(jp))
    values = sorted(k for k in set(jp) & set(op) if jp[k] != op[k])
    order = list(jp) != [k for k in op if k in jp]
    fields = (f"keys only in Java: {len(only_java)}, only in pynamesrv: {len(only_ours)}, "
              f"values: {len(values)}{', order' if order else ''}")
    return (fields, f"only here: {only_java}; " + ", ".join(f"{k}={jp[k]}" for k in values),
            f"only here: {only_ours}; " + ", ".join(f"{k}={op[k]}" for k in values))


def start(stack: ExitStack, tmp_path: Path, extra: dict[str, str], release: str) -> Servers:
    java = JavaNamesrv(tmp_path / "java", release=release)
    stack.callback(java.stop)
    node_dir, port = tmp_path / "node", free_port()
    # the node's file holds what `pynamesrv peer namesrv` writes into Java's, in its order
    props = {"listenPort": str(port), "rocketmqHome": str(java.workdir),
             "kvConfigPath": str(node_dir / "kvConfig.json"),
             "configStorePath": str(node_dir / "namesrv.properties")}
    if release != "4.9":
        props["bindAddress"] = "127.0.0.1"
    node = NodeProcess(node_dir, port=port, name="cfg",
                       props={**props, **NODE_SETTINGS[release], **extra})
    stack.callback(node.stop)
    node.launch()  # boots while the JVM does
    java.start()
    node.wait_boot()
    servers = Servers(java, node, release)
    stack.callback(servers.close)
    return servers


@pytest.fixture
def servers(tmp_path: Path, java_release: str) -> Iterator[Servers]:
    with ExitStack() as stack:
        yield start(stack, tmp_path, {}, java_release)


def java_appending(tmp_path: Path, lines: str) -> Path:
    """A `java` that appends `lines` to its `-c` file (`pynamesrv peer namesrv` writes it)."""
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
    ours = servers.without_black_list(servers.normalised("node"))
    if servers.same("fresh GET_NAMESRV_CONFIG", java, ours) and servers.release == "4.9":
        assert len(java.splitlines()) == 20  # 4.9.8: 21, with configBlackList


def test_all_true_is_ignored_by_java_and_adds_pynamesrv_settings(servers: Servers) -> None:
    assert servers.get("java", {"all": "true"}) == servers.get("java")
    if servers.release in RECORDED:
        return  # the keys Java lists differ until the node follows this release
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
    if servers.release == "4.9" and outcome["java"] != outcome["node"]:
        # 4.9.7 refuses only the two paths, with its own remark; 4.9.8 its whole black list
        key = body.split(b"=")[0]
        paths = (b"kvConfigPath", b"configStorePath")
        assert key in (*paths, b"configBlackList", b"rocketmqHome"), outcome
        assert outcome["node"] == BLACK_LIST_REFUSAL, outcome
        assert outcome["java"] == ((16, "Can not update config path") if key in paths
                                   else (0, None)), outcome
        return
    servers.same(f"UPDATE {body!r}: reply", outcome["java"], outcome["node"])
    servers.same(f"UPDATE {body!r}: GET after", servers.normalised("java"),
                 servers.without_black_list(servers.normalised("node")))


def test_unknown_file_keys_take_java_places(tmp_path: Path, java_release: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    lines = "".join(f"{k}={v}\n" for k, v in USER_KEYS.items())
    monkeypatch.setenv("JAVA", str(java_appending(tmp_path, lines)))
    with ExitStack() as stack:
        servers = start(stack, tmp_path, USER_KEYS, java_release)
        java = servers.normalised("java")
        assert set(USER_KEYS) <= set(parse_properties(java))
        servers.same("unknown file keys", java,
                     servers.without_black_list(servers.normalised("node")))
