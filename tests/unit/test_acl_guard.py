"""The node's ACL: address patterns, the accounts file, the guard's checks and reloads."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.core.protocol import acl
from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from state import nsconfig
from state.store import Store
from worker.business.acl.accounts import AclFileError, parse_accounts
from worker.business.acl.addresses import PatternError, compile_pattern, remote_host
from worker.business.acl.guard import ADMIN_CODES, SIGNED_CODES, AclGuard, Need, guard_of, need
from worker.business.context import NodeContext
from worker.business.processors import HANDLERS, handle

RQ = RequestCode
ADMIN = acl.Credentials("adminKey1", "adminSecret1")
USER = acl.Credentials("userKey01", "userSecret1")
ACCOUNTS = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    whiteRemoteAddress: 192.168.1.{1,2}
"""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def cmd(code: int, ext: dict[str, str] | None = None, body: bytes | None = None,
        flag: int = 0) -> RemotingCommand:
    return RemotingCommand(code=int(code), opaque=5, flag=flag, ext_fields=ext, body=body)


def write(path: Path, text: str) -> None:
    """Replace the file; the new inode makes the change visible whatever the clock's grain."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.fixture()
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    write(path, ACCOUNTS)
    return path


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def guard(acl_file: Path, clock: Clock) -> AclGuard:
    return AclGuard(acl_file, clock=clock)


PEER = "127.0.0.1:40000"


# ------------------------------------------------------------ address patterns

@pytest.mark.parametrize(("pattern", "host", "matches"), [
    ("192.168.0.*", "192.168.0.7", True),
    ("192.168.0.*", "192.168.1.7", False),
    ("192.168.*.*", "192.168.200.1", True),
    ("192.168.1.1-100", "192.168.1.1", True),
    ("192.168.1.1-100", "192.168.1.100", True),
    ("192.168.1.1-100", "192.168.1.101", False),
    ("192.168.1.1-100", "192.168.2.50", False),
    ("192.168.0.{1,2}", "192.168.0.2", True),
    ("192.168.0.{1,2}", "192.168.0.3", False),
    ("192.168.0.1,192.168.0.9", "192.168.0.9", True),
    ("127.0.0.1", "127.0.0.1", True),
    ("127.0.0.1", "127.0.0.2", False),
    ("*", "8.8.8.8", True),
    ("*.*.*.*", "::1", True),
    ("", "127.0.0.1", False),
    (None, "127.0.0.1", False),
    ("::1", "0:0:0:0:0:0:0:1", True),
    ("2001:db8::1-ff", "2001:db8::fe", True),
    ("2001:db8::1-ff", "2001:db8::1:fe", False),
    ("2001:db8::1-ff:*", "2001:db8::fe:1234", True),
    ("2001:db8:*", "2001:db8:5::1", True),
    ("2001:db8:*", "2001:db9::1", False),
    ("2001:db8::{1,2}", "2001:db8::2", True),
    ("192.168.0.*", "::ffff:192.168.0.1", False),  # hosts are normalized by remote_host
])
def test_address_patterns(pattern: str | None, host: str, matches: bool) -> None:
    assert compile_pattern(pattern)(host) is matches


@pytest.mark.parametrize("pattern", ["192.168.0.300", "1.2.3", "*.1.2.3", "192.168.1.100-1",
                                     "192.168.1.-5", "1:2::*:3", "localhost", "10.*",
                                     "192.168.0.{1,x}"])
def test_address_patterns_rocketmq_refuses(pattern: str) -> None:
    with pytest.raises(PatternError):
        compile_pattern(pattern)


@pytest.mark.parametrize(("peer", "host"), [
    ("127.0.0.1:1234", "127.0.0.1"), ("[::1]:80", "::1"), ("::1:80", "::1"),
    ("::ffff:10.0.0.1:9", "10.0.0.1"), ("", "")])
def test_remote_host(peer: str, host: str) -> None:
    assert remote_host(peer) == host


# ------------------------------------------------------------ accounts file

def test_rocketmqs_plain_acl_yml_layout_is_accepted() -> None:
    path = Path(__file__).resolve().parents[1] / "data" / "plain_acl.yml"
    accounts = parse_accounts(path.read_text())
    assert set(accounts.by_key) == {"RocketMQ", "rocketmq2"}
    assert accounts.by_key["rocketmq2"].admin and not accounts.by_key["RocketMQ"].admin
    assert accounts.by_key["RocketMQ"].secret_key == "12345678"  # a YAML number, read as text
    assert accounts.whitelisted("10.10.103.20") and not accounts.whitelisted("127.0.0.1")
    assert accounts.by_key["rocketmq2"].white("192.168.1.7")


@pytest.mark.parametrize(("text", "problem"), [
    ("accounts: [{accessKey: short, secretKey: longEnough1}]", "accounts[0].accessKey"),
    ("accounts: [{accessKey: longEnough1, secretKey: tiny}]", "accounts[0].secretKey"),
    ("accounts: [{accessKey: longEnough1}]", "accounts[0].secretKey: missing"),
    ("accounts:\n  - {accessKey: keyNumber1, secretKey: secret123}\n"
     "  - {accessKey: keyNumber1, secretKey: secret456}", "given twice"),
    ("accounts: [{accessKey: keyNumber1, secretKey: secret123, whiteRemoteAddress: 1.2.3}]",
     "accounts[0].whiteRemoteAddress"),
    ("accounts: [{accessKey: keyNumber1, secretKey: secret123, admin: maybe}]", "admin"),
    ("globalWhiteRemoteAddresses: 10.0.0.1", "expected a list"),
    ("globalWhiteRemoteAddresses: [300.1.1.1]", "globalWhiteRemoteAddresses[0]"),
    ("- just a list", "must be a mapping"),
    ("accounts: [unclosed", "not valid YAML"),
])
def test_broken_accounts_files(text: str, problem: str) -> None:
    with pytest.raises(AclFileError, match=problem.replace("[", r"\[").replace("]", r"\]")) \
            as err:
        parse_accounts(text)
    assert "secret" not in str(err.value).replace("secretKey", "")


def test_empty_file_has_no_accounts() -> None:
    assert parse_accounts("").by_key == {}
    assert parse_accounts("# comments only\n").global_white == ()


# ------------------------------------------------------------ which codes

def test_codes_classes() -> None:
    assert need(RQ.REGISTER_BROKER, False) is Need.SIGNED
    assert need(RQ.UPDATE_NAMESRV_CONFIG, False) is Need.ADMIN
    assert need(RQ.GET_ROUTEINFO_BY_TOPIC, False) is Need.NOTHING
    assert need(RQ.GET_ROUTEINFO_BY_TOPIC, True) is Need.SIGNED
    assert need(RQ.DELETE_KV_CONFIG, True) is Need.ADMIN
    assert set(HANDLERS) >= SIGNED_CODES | ADMIN_CODES
    assert not SIGNED_CODES & ADMIN_CODES


# ------------------------------------------------------------ checks

def test_unsigned_write_is_refused_and_reads_pass(guard: AclGuard) -> None:
    problem = guard.check(cmd(RQ.REGISTER_BROKER, {"brokerName": "b"}), PEER)
    assert problem is not None and "no AccessKey" in problem and "103" in problem
    assert guard.check(cmd(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}), PEER) is None
    assert guard.check(cmd(RQ.GET_NAMESRV_CONFIG), PEER) is None


def test_signed_by_any_account_may_write(guard: AclGuard) -> None:
    for creds in (ADMIN, USER):
        signed = acl.sign(cmd(RQ.REGISTER_BROKER, {"brokerName": "b"}, b"body"), creds)
        assert guard.check(signed, PEER) is None


def test_admin_operations_need_an_admin_account(guard: AclGuard) -> None:
    for code in ADMIN_CODES:
        request = cmd(code, {"namespace": "NS", "key": "k"}, b"x=1\n")
        assert guard.check(acl.sign(request, ADMIN), PEER) is None
        problem = guard.check(acl.sign(request, USER), PEER)
        assert problem is not None and "admin" in problem and USER.access_key in problem


def test_bad_signature_missing_signature_unknown_key(guard: AclGuard) -> None:
    request = cmd(RQ.UNREGISTER_BROKER, {"brokerName": "b"})
    wrong = acl.sign(request, acl.Credentials(USER.access_key, "notTheSecret"))
    assert "check signature failed" in (guard.check(wrong, PEER) or "")
    signed = acl.sign(request, USER)
    assert signed.ext_fields is not None
    tampered = cmd(RQ.UNREGISTER_BROKER, {**signed.ext_fields, "brokerName": "other"})
    assert "check signature failed" in (guard.check(tampered, PEER) or "")
    no_signature = cmd(RQ.UNREGISTER_BROKER, {"brokerName": "b", acl.ACCESS_KEY: "userKey01"})
    assert "no Signature" in (guard.check(no_signature, PEER) or "")
    stranger = acl.sign(request, acl.Credentials("strangerKey", "strangerSecret"))
    assert "no account for AccessKey strangerKey" in (guard.check(stranger, PEER) or "")
    for problem in (guard.check(wrong, PEER), guard.check(stranger, PEER)):
        assert "Secret" not in (problem or "")


def test_global_white_list_passes_unsigned(guard: AclGuard) -> None:
    request = cmd(RQ.UPDATE_NAMESRV_CONFIG, body=b"a=b\n")
    assert guard.check(request, "10.10.103.9:5555") is None
    assert guard.check(request, "10.10.104.9:5555") is not None
    assert guard.check(request, "") is not None  # unknown peer: never white-listed


def test_account_white_list_passes_without_signature(guard: AclGuard) -> None:
    """As RocketMQ: the account's own white list skips the signature and the admin check."""
    request = cmd(RQ.DELETE_TOPIC_IN_NAMESRV, {"topic": "T", acl.ACCESS_KEY: "userKey01"})
    assert guard.check(request, "192.168.1.2:7000") is None
    assert guard.check(request, "192.168.1.3:7000") is not None
    assert guard.check(cmd(RQ.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"}),
                       "192.168.1.2:7000") is not None  # still needs the AccessKey


def test_reads_too(acl_file: Path, clock: Clock) -> None:
    guard = AclGuard(acl_file, reads_too=True, clock=clock)
    route = cmd(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert guard.check(route, PEER) is not None
    assert guard.check(acl.sign(route, USER), PEER) is None
    assert guard.check(cmd(RQ.UPDATE_NAMESRV_CONFIG), PEER) is not None


def test_strict_signature(acl_file: Path, clock: Clock) -> None:
    guard = AclGuard(acl_file, clock=clock, strict=True)
    put = cmd(RQ.PUT_KV_CONFIG, {"namespace": "ab", "key": "cd", "value": "v"})
    plain = acl.sign(put, ADMIN)  # what stock RocketMQ clients send: refused
    assert "check StrictSignature failed" in (guard.check(plain, PEER) or "")
    strict = acl.Credentials(ADMIN.access_key, ADMIN.secret_key, strict=True)
    signed = acl.sign(put, strict)
    assert guard.check(signed, PEER) is None
    assert signed.ext_fields is not None
    recut = cmd(RQ.PUT_KV_CONFIG, {**signed.ext_fields, "namespace": "dab", "key": "c"})
    assert AclGuard(acl_file, clock=clock).check(recut, PEER) is None  # RocketMQ's check
    assert guard.check(recut, PEER) is not None


# ------------------------------------------------------------ reload

def test_reload_at_most_once_a_second(acl_file: Path, clock: Clock) -> None:
    reloads: list[int] = []
    guard = AclGuard(acl_file, clock=clock, on_reload=lambda: reloads.append(1))
    newcomer = acl.Credentials("newcomer1", "newSecret1")
    request = acl.sign(cmd(RQ.REGISTER_BROKER, {"brokerName": "b"}), newcomer)
    assert guard.check(request, PEER) is not None
    write(acl_file, ACCOUNTS + "  - {accessKey: newcomer1, secretKey: newSecret1}\n")
    clock.now += 0.5
    assert guard.check(request, PEER) is not None  # not looked at yet
    clock.now += 0.6
    assert guard.check(request, PEER) is None
    assert reloads == [1]
    clock.now += 5
    guard.refresh()
    assert reloads == [1]  # unchanged file: not re-read


def test_broken_file_keeps_accounts_and_logs_one_error(
        acl_file: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    guard = AclGuard(acl_file, clock=clock)
    request = acl.sign(cmd(RQ.REGISTER_BROKER, {"brokerName": "b"}), USER)
    caplog.set_level(logging.ERROR, "pynamesrv.acl")
    write(acl_file, "accounts: [{accessKey: userKey01, secretKey: x}]\n")
    for _ in range(5):
        clock.now += 1.5
        assert guard.check(request, PEER) is None
    errors = [r for r in caplog.records if "acl_file_error" in r.getMessage()]
    assert len(errors) == 1 and "userSecret1" not in errors[0].getMessage()
    acl_file.unlink()
    clock.now += 1.5
    assert guard.check(request, PEER) is None  # a deleted file keeps the accounts too
    write(acl_file, ACCOUNTS.replace("userSecret1", "userSecret2"))
    clock.now += 1.5
    assert guard.check(request, PEER) is not None  # the fixed file is in force
    assert len([r for r in caplog.records if "acl_file_error" in r.getMessage()]) == 2


def test_missing_file_at_start_refuses_writes(tmp_path: Path, clock: Clock,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, "pynamesrv.acl")
    guard = AclGuard(tmp_path / "absent.yml", clock=clock)
    assert guard.check(acl.sign(cmd(RQ.REGISTER_BROKER), ADMIN), PEER) is not None
    assert len([r for r in caplog.records if "acl_file_error" in r.getMessage()]) == 1


# ------------------------------------------------------------ through the processors

@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 32 << 20)
    yield s
    s.destroy()


def acl_ctx(store: Store, tmp_path: Path, acl_file: Path, enable: str = "true") -> NodeContext:
    nsconfig.initialize(store, {"aclEnable": enable, "aclFile": str(acl_file)},
                        str(tmp_path / "namesrv.properties"), str(tmp_path / "kv.json"))
    return NodeContext(store=store, node_name="n1", clock=lambda: 1000, acl=guard_of(store))


def test_processors_refuse_before_running_the_handler(store: Store, tmp_path: Path,
                                                       acl_file: Path) -> None:
    ctx = acl_ctx(store, tmp_path, acl_file)
    put = cmd(RQ.PUT_KV_CONFIG, {"namespace": "NS", "key": "k", "value": "v"})
    reply = handle(ctx, put, "0.1.1", PEER)
    assert reply is not None and reply.code == ResponseCode.NO_PERMISSION
    assert reply.opaque == 5 and "no AccessKey" in (reply.remark or "")
    assert handle(ctx, cmd(RQ.PUT_KV_CONFIG, put.ext_fields, flag=FLAG_ONEWAY), "0.1.1",
                  PEER) is None
    get = cmd(RQ.GET_KV_CONFIG, {"namespace": "NS", "key": "k"})
    assert handle(ctx, get, "0.1.1", PEER).code == ResponseCode.QUERY_NOT_FOUND  # type: ignore[union-attr]
    reply = handle(ctx, acl.sign(put, ADMIN), "0.1.1", PEER)
    assert reply is not None and reply.code == ResponseCode.SUCCESS
    assert handle(ctx, get, "0.1.1", PEER).code == ResponseCode.SUCCESS  # type: ignore[union-attr]


def test_acl_off_by_default(store: Store, tmp_path: Path, acl_file: Path) -> None:
    assert acl_ctx(store, tmp_path, acl_file, enable="false").acl is None
