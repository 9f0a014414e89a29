"""TLS on the listen port (``tls.server.mode``): permissive takes TLS and plain clients on
one port, enforcing only TLS; the project's client and the real Java client both speak it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cluster.client.connection import ConnectionPool, IoLoop, tls_client_context
from cluster.client.errors import ConnectError
from cluster.client.nsclient import NameServerClient
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import decode_frame
from tests.nodeproc import Conn, NodeProcess, free_port
from tests.unit.test_large_frames import registration
from worker import wire
from worker.io.connection import LARGE_FRAME

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA made for the test, and a node certificate for 127.0.0.1 signed by it."""
    d = tmp_path_factory.mktemp("certs")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=pynamesrv test CA", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "node.pem", "-days", "2", "-extfile", "san.ext", cwd=d)
    return d


def tls_node(tmp_path: Path, certs: Path, mode: str) -> NodeProcess:
    return NodeProcess(tmp_path / mode, props={
        "tls.server.mode": mode, "tls.server.certPath": str(certs / "node.pem"),
        "tls.server.keyPath": str(certs / "node.key")}).start()


@pytest.fixture(params=["permissive", "enforcing"])
def node(request: pytest.FixtureRequest, tmp_path: Path, certs: Path) -> Iterator[NodeProcess]:
    n = tls_node(tmp_path, certs, request.param)
    yield n
    n.stop()


def tls_client(node: NodeProcess, certs: Path) -> NameServerClient:
    pool = ConnectionPool(IoLoop(), tls=tls_client_context(str(certs / "ca.pem")))
    return NameServerClient([node.addr], pool=pool, timeout=10)


def close(client: NameServerClient) -> None:
    client.close()
    client.io.close()  # the pool's loop thread, given to the client


def test_the_project_client_reads_over_tls_with_the_ca(node: NodeProcess, certs: Path) -> None:
    client = tls_client(node, certs)
    try:
        assert client.get_cluster_info() is not None
    finally:
        close(client)


def test_a_registration_of_megabytes_over_tls(node: NodeProcess, certs: Path) -> None:
    """A frame large enough to be read into a buffer of its own, through the TLS layer; and
    a topic list long enough to be written from the business worker's message in place."""
    frame = registration(20_000)
    assert len(frame) > LARGE_FRAME * 4
    client = tls_client(node, certs)
    try:
        reply = client.pool.call(node.addr, decode_frame(frame), 30)
        assert reply.code == ResponseCode.SUCCESS, reply.remark
        route = client.get_route("T19999")
        assert route["brokerDatas"][0]["brokerName"] == "b"
        topics = client.get_all_topics()["topicList"]
        assert len(orjson.dumps(topics)) > wire.VIEW_FROM
        assert {f"T{i:05d}" for i in range(20_000)} <= set(topics)
    finally:
        close(client)


def test_plain_clients_per_mode(node: NodeProcess) -> None:
    conn = Conn(node.addr)
    info = RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409)
    if "permissive" in str(node.data_dir):
        assert conn.call(info).code == ResponseCode.SUCCESS
    else:
        with pytest.raises((ConnectionError, OSError)):
            conn.call(info)
    conn.close()


def test_a_client_that_does_not_trust_the_node_is_refused(tmp_path: Path, certs: Path) -> None:
    other = tmp_path / "other-ca"
    other.mkdir()
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=another CA", cwd=other)
    node = tls_node(tmp_path, certs, "enforcing")
    try:
        pool = ConnectionPool(IoLoop(), tls=tls_client_context(str(other / "ca.pem")))
        client = NameServerClient([node.addr], pool=pool, timeout=5)
        with pytest.raises(ConnectError, match="TLS"):
            client.get_cluster_info()
        close(client)
    finally:
        node.stop()


def test_a_missing_certificate_stops_the_node_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "namesrv.properties").write_text(
        "tls.server.mode=enforcing\ntls.server.certPath=missing.pem\n"
        "tls.server.keyPath=missing.key\n")
    out = subprocess.run([sys.executable, "-m", "worker.controller", "--port", str(free_port()),
                          "--data-dir", str(tmp_path), "--config",
                          str(tmp_path / "namesrv.properties")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "tls.server.certPath" in lines[0], out.stderr


def test_a_self_signed_certificate_is_warned_about_at_start(tmp_path: Path, certs: Path
                                                           ) -> None:
    """The CA's own certificate is self-signed: the node serves with it, and says so."""
    n = NodeProcess(tmp_path / "self", props={
        "tls.server.mode": "permissive", "tls.server.certPath": str(certs / "ca.pem"),
        "tls.server.keyPath": str(certs / "ca.key")}).start()
    warnings = [ln for ln in n.stop().splitlines() if "event=tls_certificate" in ln]
    # (and, made for two days, that it expires soon)
    assert any("self-signed" in w for w in warnings) and len(warnings) <= 2, warnings


@pytest.mark.java
def test_the_java_client_reads_routes_over_tls(node: NodeProcess, tmp_path: Path) -> None:
    """mqadmin (the Java client) with -Dtls.enable=true, RocketMQ's default test mode."""
    from tests.javaproc import java_missing, mqadmin

    if java_missing():
        pytest.skip(java_missing())
    os.environ["JAVA_OPT_EXT"] = "-Dtls.enable=true"
    try:
        out = mqadmin("clusterList", "-n", node.addr, home=tmp_path / "adm")
        route = mqadmin("topicRoute", "-n", node.addr, "-t", "TBW102", home=tmp_path / "adm")
    finally:
        del os.environ["JAVA_OPT_EXT"]
    assert out.returncode == 0 and "#Cluster Name" in out.stdout, out.stdout + out.stderr
    assert "No topic route info" in route.stdout + route.stderr, route.stdout + route.stderr


def test_the_port_is_shared_not_doubled(node: NodeProcess) -> None:
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", node.port)) == 0
