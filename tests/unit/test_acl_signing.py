"""RocketMQ ACL 1.0 signing (cluster.core.protocol.acl) against requests real clients signed.

The two mqadmin frames were sent by the real mqadmin 4.9.8, signing with a release's
conf/tools.yml (accessKey rocketmq2, secretKey 12345678), to a
listener that read one frame and never answered:
``mqadmin updateNamesrvConfig -k orderMessageEnable -v true`` (a body) and
``mqadmin updateKvConfig -s ORDER_TOPIC_CONFIG -k TopicA -v broker-a:4`` (no body).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pytest

from cluster.client.connection import ConnectionPool, IoLoop
from cluster.client.credentials import (
    ACCESS_KEY_ENV,
    SECRET_KEY_ENV,
    add_credential_args,
    credentials_from_args,
)
from cluster.core.errors import UserError
from cluster.core.protocol import acl
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import decode_command
from cluster.peers.catalog import release
from cluster.peers.java import prepare_home

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
TOOLS = acl.Credentials("rocketmq2", "12345678")  # a release's conf/tools.yml

MQADMIN_318 = (
    "000000ce000000b27b22636f6465223a3331382c226578744669656c6473223a7b225369676e6174757265"
    "223a2242554f4563586930464566386d334454323178414c6167616638343d222c224163636573734b6579"
    "223a22726f636b65746d7132227d2c22666c6167223a302c226c616e6775616765223a224a415641222c22"
    "6f7061717565223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c"
    "2276657273696f6e223a3430397d6f726465724d657373616765456e61626c653d747275650a")
MQADMIN_100 = (
    "000000fb000000f77b22636f6465223a3130302c226578744669656c6473223a7b225369676e6174757265"
    "223a224248794c3269364a6868657132754a2b306652764d367a635166553d222c226e616d657370616365"
    "223a224f524445525f544f5049435f434f4e464947222c224163636573734b6579223a22726f636b65746d"
    "7132222c2276616c7565223a2262726f6b65722d613a34222c226b6579223a22546f70696341227d2c2266"
    "6c6167223a302c226c616e6775616765223a224a415641222c226f7061717565223a302c2273657269616c"
    "697a655479706543757272656e74525043223a224a534f4e222c2276657273696f6e223a3430397d")


def frame_command(hex_frame: str) -> RemotingCommand:
    return decode_command(bytes.fromhex(hex_frame)[4:])


def unsigned(cmd: RemotingCommand) -> RemotingCommand:
    ext = {k: v for k, v in (cmd.ext_fields or {}).items()
           if k not in (acl.ACCESS_KEY, acl.SIGNATURE)}
    return replace(cmd, ext_fields=ext)


@pytest.mark.parametrize("hex_frame", [MQADMIN_318, MQADMIN_100], ids=["318-body", "100"])
def test_mqadmin_signature_is_reproduced(hex_frame: str) -> None:
    sent = frame_command(hex_frame)
    assert acl.signature_valid(sent, TOOLS.secret_key)
    assert not acl.signature_valid(sent, "12345679")
    again = acl.sign(unsigned(sent), TOOLS)
    assert again.ext_fields == sent.ext_fields


def test_pool_signs_every_request_it_prepares() -> None:
    io = IoLoop("test-acl")
    try:
        signing = ConnectionPool(io, credentials=TOOLS)
        plain = ConnectionPool(io)
        cmd = unsigned(frame_command(MQADMIN_318))
        _, frame = signing.prepare(cmd)
        sent = decode_command(frame[4:])
        assert sent.ext_fields == frame_command(MQADMIN_318).ext_fields
        _, frame = plain.prepare(cmd)
        assert decode_command(frame[4:]).ext_fields == {}
    finally:
        io.close()


def test_mqadmin_home_signs_with_the_keys_used_here(tmp_path: Path) -> None:
    """``pynamesrv peer mqadmin`` writes a release's conf/tools.yml: the keys above."""
    home = prepare_home(tmp_path, release("5.5"), tools_yml=True)
    text = (home / "conf" / "tools.yml").read_text()
    assert f"accessKey: {TOOLS.access_key}" in text
    assert f"secretKey: {TOOLS.secret_key}" in text


def test_captured_cpp_client_request_is_signed_the_same_way() -> None:
    """The C++ client signs even without keys: AccessKey "" and an empty secret."""
    path = SHARED / "captures" / "client-requests.jsonl"
    if not path.is_file():
        pytest.skip(f"no {path}")
    signed = [json.loads(line) for line in path.read_text().splitlines()
              if '"Signature"' in line]
    assert signed
    for entry in signed:
        cmd = decode_command(bytes.fromhex(entry["hex"])[4:])
        assert acl.signature_valid(cmd, ""), entry["client"]
        assert acl.sign(unsigned(cmd), acl.Credentials("", "")).ext_fields == cmd.ext_fields


def test_content_is_values_in_java_key_order_then_body() -> None:
    ext = {"b": "2", "a": "1", acl.SIGNATURE: "x", "C": "3"}
    assert acl.request_content(ext, b"BODY") == b"312BODY"
    assert acl.request_content(None, None) == b""


def test_key_order_is_javas_utf16_order() -> None:
    # U+1F600 is a surrogate pair (D83D DE00): below U+FFFF for Java, above it by code point
    ext = {"\uffff": "high", "\U0001f600": "emoji"}
    assert acl.request_content(ext, None) == b"emojihigh"


def test_sign_adds_the_security_token_and_covers_it() -> None:
    cmd = RemotingCommand(code=103, ext_fields={"brokerName": "b"}, body=b"x")
    signed = acl.sign(cmd, acl.Credentials("AK123456", "SK123456", "TOKEN"))
    assert signed.ext_fields is not None and signed.ext_fields[acl.SECURITY_TOKEN] == "TOKEN"
    assert acl.signature_valid(signed, "SK123456")
    tampered = replace(signed, ext_fields={**signed.ext_fields, acl.SECURITY_TOKEN: "OTHER"})
    assert not acl.signature_valid(tampered, "SK123456")
    assert cmd.ext_fields == {"brokerName": "b"}  # the original is untouched


def test_body_and_unique_key_flag() -> None:
    cmd = acl.sign(RemotingCommand(code=318, body=b"a=1\n"), TOOLS)
    assert not acl.signature_valid(replace(cmd, body=b"a=2\n"), TOOLS.secret_key)
    # the Java validator leaves _UNIQUE_KEY_QUERY out of the content
    ext = {**(cmd.ext_fields or {}), acl.UNIQUE_MSG_QUERY_FLAG: "true"}
    assert acl.signature_valid(replace(cmd, ext_fields=ext), TOOLS.secret_key)
    assert not acl.signature_valid(unsigned(cmd), TOOLS.secret_key)


def test_credentials_repr_hides_the_secret() -> None:
    assert "12345678" not in repr(TOOLS)


def test_tool_credentials_from_options_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = argparse.ArgumentParser()
    add_credential_args(parser)
    monkeypatch.delenv(ACCESS_KEY_ENV, raising=False)
    monkeypatch.delenv(SECRET_KEY_ENV, raising=False)
    assert credentials_from_args(parser.parse_args([])) is None
    given = parser.parse_args(["--access-key", "ak12345", "--secret-key", "sk12345"])
    assert credentials_from_args(given) == acl.Credentials("ak12345", "sk12345")
    monkeypatch.setenv(ACCESS_KEY_ENV, "envKey1")
    with pytest.raises(UserError, match="secret key"):
        credentials_from_args(parser.parse_args([]))
    monkeypatch.setenv(SECRET_KEY_ENV, "envSecret")
    assert credentials_from_args(parser.parse_args([])) == acl.Credentials("envKey1", "envSecret")
    assert credentials_from_args(given) == acl.Credentials("ak12345", "sk12345")  # options win


def _kv(code: int, ns: str, key: str) -> RemotingCommand:
    return RemotingCommand(code=code, ext_fields={"namespace": ns, "key": key, "value": "v"})


def test_rocketmqs_signature_can_be_altered_the_strict_one_cannot() -> None:
    strict = acl.Credentials("AK123456", "SK123456", strict=True)
    signed = acl.sign(_kv(100, "ab", "cd"), strict)
    ext = dict(signed.ext_fields or {})
    recut = replace(signed, ext_fields={**ext, "namespace": "dab", "key": "c"})
    recoded = replace(signed, code=102)  # the PUT sent as a DELETE
    for altered in (recut, recoded):
        assert acl.signature_valid(altered, "SK123456")  # RocketMQ's: still valid
        assert not acl.strict_signature_valid(altered, "SK123456")
    assert acl.signature_valid(signed, "SK123456")
    assert acl.strict_signature_valid(signed, "SK123456")
    assert not acl.strict_signature_valid(signed, "SK123457")
    plain = acl.sign(_kv(100, "ab", "cd"), acl.Credentials("AK123456", "SK123456"))
    assert acl.STRICT_SIGNATURE not in (plain.ext_fields or {})  # as RocketMQ signs
    assert not acl.strict_signature_valid(plain, "SK123456")


def test_strict_content_is_unambiguous() -> None:
    assert acl.strict_content(100, {"key": "cd", "namespace": "ab", acl.SIGNATURE: "x"},
                              b"BODY") == b"100;3:key2:cd9:namespace2:ab4:BODY"
    assert acl.strict_content(100, {"key": "c", "namespace": "dab"}, None) != \
        acl.strict_content(100, {"key": "cd", "namespace": "ab"}, None)


def test_strict_signature_option_of_the_tools() -> None:
    parser = argparse.ArgumentParser()
    add_credential_args(parser)
    args = parser.parse_args(["--access-key", "AK123456", "--secret-key", "SK123456",
                              "--strict-signature"])
    creds = credentials_from_args(args)
    assert creds is not None and creds.strict
