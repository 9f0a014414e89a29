"""ACL against the real RocketMQ 4.9: mqadmin signs with conf/tools.yml, a broker does not.

The node runs with ``aclEnable=true`` and an accounts file in the layout of RocketMQ's
``conf/plain_acl.yml`` (``tests/data/plain_acl.yml``), whose admin account ``rocketmq2``
is the one a release's ``conf/tools.yml`` signs with.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.integration.test_node import register
from tests.javaproc import JavaBroker, free_broker_port, java_missing, mqadmin
from tests.nodeproc import Conn, NodeProcess, poll_until

MISSING = java_missing()
PLAIN_ACL = Path(__file__).resolve().parents[1] / "data" / "plain_acl.yml"
pytestmark = [pytest.mark.java, pytest.mark.skipif(bool(MISSING), reason=MISSING)]
REFUSAL_S = 60.0  # a broker's first registration comes right after its boot line


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    n = NodeProcess(tmp_path / "node", props={
        "aclEnable": "true", "aclFile": str(PLAIN_ACL)}).start()
    yield n
    n.stop()


def namesrv_config(node: NodeProcess) -> str:
    conn = Conn(node.addr)
    try:
        reply = conn.call(RemotingCommand(code=RequestCode.GET_NAMESRV_CONFIG, version=409))
    finally:
        conn.close()
    assert reply.code == ResponseCode.SUCCESS and reply.body is not None
    return reply.body.decode()


def test_mqadmin_with_tools_yml_updates_config_and_without_keys_is_refused(
        node: NodeProcess, tmp_path: Path) -> None:
    signed = mqadmin("updateNamesrvConfig", "-n", node.addr, "-k", "orderMessageEnable",
                     "-v", "true", home=tmp_path / "adm")
    assert signed.returncode == 0, signed.stdout + signed.stderr
    assert "update name server config success" in signed.stdout
    assert "orderMessageEnable=true" in namesrv_config(node)

    refused = mqadmin("updateNamesrvConfig", "-n", node.addr, "-k", "orderMessageEnable",
                      "-v", "false", home=tmp_path / "adm-unsigned", keys=False)
    out = refused.stdout + refused.stderr
    assert "CODE: 16" in out and "no AccessKey" in out, out
    assert "orderMessageEnable=true" in namesrv_config(node)
    reads = mqadmin("getNamesrvConfig", "-n", node.addr, home=tmp_path / "adm-unsigned",
                    keys=False)
    assert reads.returncode == 0 and "orderMessageEnable" in reads.stdout  # reads stay open


def test_broker_4_9_does_not_sign_its_registrations(node: NodeProcess,
                                                      tmp_path: Path) -> None:
    """BrokerOuterAPI 4.9 has no RPC hook: aclEnable and keys in broker.conf do not make it
    sign, so an ACL node refuses it, as it refuses any unsigned REGISTER_BROKER."""
    conn = Conn(node.addr)
    try:
        assert conn.call(register("RawTopic")).code == ResponseCode.NO_PERMISSION
    finally:
        conn.close()
    broker = JavaBroker(tmp_path / "broker", node.addr, "acl-broker", "AclCluster", 0,
                        free_broker_port(set()), settings={
                            "aclEnable": "true", "accessKey": "rocketmq2",
                            "secretKey": "12345678"}).start()
    try:
        log = tmp_path / "broker" / "logs" / "rocketmqlogs" / "broker.log"
        poll_until(lambda: log.exists() and "registerBroker Exception"
                   in log.read_text(errors="replace"), timeout=REFUSAL_S, interval=0.5,
                   what="the broker's refused registration in its log")
        assert "CODE: 16" in log.read_text(errors="replace")
        conn = Conn(node.addr)
        try:
            reply = conn.call(RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO,
                                              version=409))
        finally:
            conn.close()
        assert b"acl-broker" not in (reply.body or b"")
    finally:
        broker.stop()
    assert "event=acl_refused code=103" in node.stop()
