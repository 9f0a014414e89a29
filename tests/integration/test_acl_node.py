"""ACL on a real node: unsigned writes refused, signed ones applied, reads open, reloads live.

The clients are the project's own (raw frames, ``BrokerOuterAPI``, the ``pynamesrv``
admin verbs), all signing through ``cluster.core.protocol.acl``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cluster.client.errors import RemoteError
from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload, Status
from cluster.core.protocol import acl
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.integration.test_node import register, route
from tests.nodeproc import PYNAMESRV, Conn, NodeProcess, poll_until
from worker.business.acl.guard import RECHECK_S, TAKES_EFFECT_S

pytestmark = pytest.mark.integration
ADMIN = acl.Credentials("adminKey1", "adminSecret1")
BROKER = acl.Credentials("brokerKey1", "brokerSecret1")
ACCOUNTS = """\
accounts:
  - {accessKey: adminKey1, secretKey: adminSecret1, admin: true}
  - {accessKey: brokerKey1, secretKey: brokerSecret1}
"""
RELOAD_S = 15.0


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    data = tmp_path / "n1"
    data.mkdir()
    (data / "plain_acl.yml").write_text(ACCOUNTS)  # the default aclFile
    n = NodeProcess(data, props={"aclEnable": "true"}).start()
    yield n
    n.stop()


def kv_put(key: str, value: str) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.PUT_KV_CONFIG, version=409,
                           ext_fields={"namespace": "NS", "key": key, "value": value})


def test_unsigned_register_is_refused_and_signed_one_applied(node: NodeProcess) -> None:
    conn = Conn(node.addr)
    try:
        reply = conn.call(register("AclTopic"))
        assert reply.code == ResponseCode.NO_PERMISSION
        assert "no AccessKey" in (reply.remark or "")
        assert conn.call(route("AclTopic")).code == ResponseCode.TOPIC_NOT_EXIST
        forged = acl.sign(register("AclTopic"), acl.Credentials(BROKER.access_key, "guessed1"))
        assert "signature failed" in (conn.call(forged).remark or "")
        assert conn.call(acl.sign(register("AclTopic"), BROKER)).code == ResponseCode.SUCCESS
        assert conn.call(route("AclTopic")).code == ResponseCode.SUCCESS  # reads stay open
    finally:
        conn.close()


def test_fanout_client_signs(node: NodeProcess) -> None:
    who = BrokerIdentity("AclCluster", "acl-broker", "127.0.0.1:10911")
    topic = {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
             "topicName": "FanoutAclTopic", "topicSysFlag": 0, "writeQueueNums": 4}
    payload = RegisterPayload.build({"counter": 1, "timestamp": 1}, {"FanoutAclTopic": topic})
    with BrokerOuterAPI([node.addr], credentials=BROKER) as api:
        assert api.register_broker_all(who, payload).outcomes[node.addr].status is Status.OK
    with BrokerOuterAPI([node.addr]) as api:
        outcome = api.unregister_broker_all(who).outcomes[node.addr]
        assert outcome.status is Status.FAILED and isinstance(outcome.error, RemoteError)
        assert outcome.error.code == ResponseCode.NO_PERMISSION


def admin_verb(node: NodeProcess, *args: str, creds: acl.Credentials | None
               ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYNAMESRV_")}
    if creds is not None:
        env.update(PYNAMESRV_ACCESS_KEY=creds.access_key, PYNAMESRV_SECRET_KEY=creds.secret_key)
    return subprocess.run([PYNAMESRV, *args, "-n", node.addr], capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL)


def test_admin_verbs_need_an_admin_account(node: NodeProcess) -> None:
    verb = ("updateKvConfig", "-s", "NS", "-k", "k1", "-v", "v1")
    refused = admin_verb(node, *verb, creds=None)
    assert refused.returncode == 1 and "no AccessKey" in refused.stderr
    refused = admin_verb(node, *verb, creds=BROKER)
    assert refused.returncode == 1 and "needs an admin account" in refused.stderr
    assert "brokerSecret1" not in refused.stderr + refused.stdout
    done = admin_verb(node, *verb, creds=ADMIN)
    assert done.returncode == 0, done.stderr
    shown = admin_verb(node, "getKvConfig", "-s", "NS", "-k", "k1", creds=None)
    assert shown.returncode == 0 and "v1" in shown.stdout
    options = admin_verb(node, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true",
                         "--access-key", ADMIN.access_key, "--secret-key", ADMIN.secret_key,
                         creds=None)
    assert options.returncode == 0, options.stderr
    half = admin_verb(node, "getKvConfig", "-s", "NS", "-k", "k1", "--access-key", "x1234567",
                      creds=None)
    assert half.returncode == 2 and "secret key" in half.stderr


def test_accounts_file_is_reloaded_without_restart(node: NodeProcess) -> None:
    newcomer = acl.Credentials("newcomer1", "newSecret1")
    conn = Conn(node.addr)
    try:
        assert conn.call(acl.sign(kv_put("a", "1"), newcomer)).code == \
            ResponseCode.NO_PERMISSION
        path = node.data_dir / "plain_acl.yml"
        tmp = path.with_suffix(".new")
        tmp.write_text(ACCOUNTS + "  - {accessKey: newcomer1, secretKey: newSecret1, "
                       "admin: true}\n")
        os.replace(tmp, path)
        poll_until(lambda: conn.call(acl.sign(kv_put("a", "2"), newcomer)).code
                   == ResponseCode.SUCCESS, timeout=RELOAD_S, interval=0.2,
                   what="the new account accepted")
        tmp.write_text("accounts: [broken\n")
        os.replace(tmp, path)
        # a broken file keeps the accounts in force, through several looks at the file
        until = time.monotonic() + 3 * RECHECK_S
        while time.monotonic() < until:
            assert conn.call(acl.sign(kv_put("a", "3"), newcomer)).code == ResponseCode.SUCCESS
            time.sleep(0.1)  # asked again and again over the whole window: the point
    finally:
        conn.close()
    err = node.stop()
    assert err.count("event=acl_file_error") == 2  # once per business worker: each looks
    assert "newSecret1" not in err and "adminSecret1" not in err


def test_update_config_cannot_turn_acl_off(node: NodeProcess) -> None:
    conn = Conn(node.addr)
    try:
        for text, code in (("aclEnable=false\n", ResponseCode.SYSTEM_ERROR),
                           ("aclFile=/etc/passwd\n", ResponseCode.NO_PERMISSION)):
            cmd = RemotingCommand(code=RequestCode.UPDATE_NAMESRV_CONFIG, version=409,
                                  body=text.encode())
            assert conn.call(acl.sign(cmd, ADMIN)).code == code
        assert conn.call(register("StillGuarded")).code == ResponseCode.NO_PERMISSION
    finally:
        conn.close()


def broker_sim(node: NodeProcess, *keys: str) -> dict[str, int]:
    """``pynamesrv broker-sim`` for a second; the node's counters of its last summary."""
    done = admin_verb(node, "broker-sim", "--brokers", "1", "--topics", "2", "--duration", "1",
                      "--no-unregister", "--json", *keys, creds=None)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout.splitlines()[-1])["nodes"][node.addr]


def test_broker_sim_signs_with_its_options(node: NodeProcess) -> None:
    unsigned = broker_sim(node)
    assert unsigned["ok"] == 0 and unsigned["failed"] >= 1
    assert "no AccessKey" in unsigned["last_error"], unsigned
    signed = broker_sim(node, "--access-key", BROKER.access_key,
                        "--secret-key", BROKER.secret_key)
    assert signed["ok"] >= 1 and signed["failed"] == 0


def test_a_white_listed_address_needs_no_signature(tmp_path: Path) -> None:
    """The peer address travels in the channel id from the I/O worker to the pool."""
    data = tmp_path / "white"
    data.mkdir()
    (data / "plain_acl.yml").write_text("globalWhiteRemoteAddresses:\n  - 127.0.0.*\n" + ACCOUNTS)
    other = tmp_path / "other"
    other.mkdir()
    (other / "plain_acl.yml").write_text("globalWhiteRemoteAddresses:\n  - 10.1.1.*\n" + ACCOUNTS)
    for path, code in ((data, ResponseCode.SUCCESS), (other, ResponseCode.NO_PERMISSION)):
        n = NodeProcess(path, props={"aclEnable": "true"}).start()
        try:
            assert Conn(n.addr).call(kv_put("w", "v")).code == code
        finally:
            n.stop()


def test_a_withdrawn_account_doing_only_cached_lookups_is_refused_in_time(
        tmp_path: Path) -> None:
    """aclReadsToo: route lookups answered from the I/O worker's cache follow the file too,
    though no request of the withdrawn account reaches a business worker any more."""
    data = tmp_path / "reads"
    data.mkdir()
    reader = acl.Credentials("reader01", "readSecret1")
    path = data / "plain_acl.yml"
    path.write_text(ACCOUNTS + "  - {accessKey: reader01, secretKey: readSecret1}\n")
    n = NodeProcess(data, props={"aclEnable": "true", "aclReadsToo": "true"}).start()
    conn = Conn(n.addr)
    try:
        assert conn.call(acl.sign(register("CachedTopic"), BROKER)).code == ResponseCode.SUCCESS
        lookup = acl.sign(route("CachedTopic"), reader)  # the same signed header every time
        for _ in range(20):  # learned once, then answered from the I/O worker's cache
            lookup.opaque = 0
            assert conn.call(lookup).code == ResponseCode.SUCCESS
        tmp = path.with_suffix(".new")
        tmp.write_text(ACCOUNTS)
        os.replace(tmp, path)
        withdrawn = time.monotonic()

        def refused() -> bool:
            lookup.opaque = 0
            return conn.call(lookup).code == ResponseCode.NO_PERMISSION

        poll_until(refused, timeout=30, interval=0.02, what="the withdrawn account refused")
        took = time.monotonic() - withdrawn
    finally:
        conn.close()
        n.stop()
    assert took < 2 * TAKES_EFFECT_S, f"refused only {took:.2f} s after the withdrawal"
