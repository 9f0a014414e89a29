"""RocketMQ ACL 1.0 request signing, shared by the node (checking) and the clients (signing).

A signed request carries the extFields ``AccessKey`` (and ``SecurityToken`` when
one is used) and ``Signature``: the base64 of HMAC-SHA1, keyed with the UTF-8
secret key, over the values of every extField but ``Signature`` in key order
(Java's ``TreeMap<String, String>``: UTF-16 code unit order), concatenated and
UTF-8 encoded, followed by the body (``AclUtils.combineRequestContent`` and
``AclClientRPCHook`` of RocketMQ 4.9.8). No timestamp or nonce is signed: a
captured request can be replayed, as in RocketMQ. Neither are the request code nor
the extFields' names, so a signed request can also be altered: its code changed
(a PUT_KV_CONFIG sent as DELETE_KV_CONFIG) or characters moved between adjacent values
(from a signed PUT of namespace ``ab``, key ``cd``, a PUT of namespace ``dab``, key
``c`` verifies).

``StrictSignature`` (pynamesrv's stricter mode, ``Credentials.strict``) is the same
HMAC over a content that cannot be re-cut: the request code, then every extField but
the signatures as length-prefixed name and value, in key order, then the body with its
length (``strict_content``). A strict client sends both; ``Signature`` covers the
``StrictSignature`` field like any other, so RocketMQ's validators still accept it.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from cluster.core.protocol.command import RemotingCommand

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
STRICT_SIGNATURE = "StrictSignature"
# the extFields that sign a request (what it asks is in the others)
SIGNING_FIELDS = frozenset({ACCESS_KEY, SIGNATURE, SECURITY_TOKEN, STRICT_SIGNATURE})
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"  # left out of the content by the Java validator
KEY_MIN_LENGTH = 7  # RocketMQ refuses access and secret keys of 6 characters or fewer


@dataclass(frozen=True, slots=True)
class Credentials:
    """An account's keys as a client uses them; ``repr`` never shows the secret."""

    access_key: str
    secret_key: str
    security_token: str | None = None
    strict: bool = False  # also send StrictSignature

    def __repr__(self) -> str:
        return f"Credentials(access_key={self.access_key!r}, secret_key=***)"


def _java_order(key: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def request_content(ext_fields: Mapping[str, str] | None, body: bytes | None,
                    leave_out: Iterable[str] = (SIGNATURE,)) -> bytes:
    """The signed bytes: extField values in key order (without ``leave_out``), then the body."""
    skip = set(leave_out)
    fields = ext_fields or {}
    text = "".join(fields[k] for k in sorted(fields, key=_java_order) if k not in skip)
    return text.encode("utf-8", "replace") + (body or b"")  # Java writes "?" for a lone surrogate


def strict_content(code: int, ext_fields: Mapping[str, str] | None, body: bytes | None
                   ) -> bytes:
    """What ``StrictSignature`` signs: ``code;``, then ``len:name len:value`` of every
    extField but the signatures (UTF-8 lengths, in key order), then ``len:`` and the body."""
    fields = ext_fields or {}
    parts = [b"%d;" % code]
    for key in sorted(fields, key=_java_order):
        if key in (SIGNATURE, STRICT_SIGNATURE):
            continue
        name, value = key.encode("utf-8", "replace"), fields[key].encode("utf-8", "replace")
        parts.append(b"%d:%s%d:%s" % (len(name), name, len(value), value))
    parts.append(b"%d:" % len(body or b""))
    parts.append(body or b"")
    return b"".join(parts)


def signature(content: bytes, secret_key: str) -> str:
    """base64(HMAC-SHA1(secret_key, content)), as ``AclSigner.calSignature``."""
    mac = hmac.new(secret_key.encode("utf-8", "replace"), content, hashlib.sha1).digest()
    return base64.b64encode(mac).decode("ascii")


def sign(cmd: RemotingCommand, creds: Credentials) -> RemotingCommand:
    """A copy of ``cmd`` with ``AccessKey`` (``SecurityToken``, ``StrictSignature``) and
    ``Signature`` added."""
    ext = dict(cmd.ext_fields or {})
    ext[ACCESS_KEY] = creds.access_key
    if creds.security_token is not None:
        ext[SECURITY_TOKEN] = creds.security_token
    if creds.strict:
        ext[STRICT_SIGNATURE] = signature(strict_content(cmd.code, ext, cmd.body),
                                          creds.secret_key)
    ext[SIGNATURE] = signature(request_content(ext, cmd.body), creds.secret_key)
    return replace(cmd, ext_fields=ext)


def signature_valid(cmd: RemotingCommand, secret_key: str) -> bool:
    """Whether ``cmd``'s ``Signature`` is the one ``secret_key`` gives (the validator's
    content: every extField but ``Signature`` and ``_UNIQUE_KEY_QUERY``, then the body)."""
    sent = cmd.field(SIGNATURE)
    if sent is None:
        return False
    content = request_content(cmd.ext_fields, cmd.body, (SIGNATURE, UNIQUE_MSG_QUERY_FLAG))
    expected = signature(content, secret_key).encode("ascii")
    return hmac.compare_digest(expected, sent.encode("utf-8", "replace"))


def strict_signature_valid(cmd: RemotingCommand, secret_key: str) -> bool:
    """Whether ``cmd``'s ``StrictSignature`` is the one ``secret_key`` gives."""
    sent = cmd.field(STRICT_SIGNATURE)
    if sent is None:
        return False
    expected = signature(strict_content(cmd.code, cmd.ext_fields, cmd.body), secret_key)
    return hmac.compare_digest(expected.encode("ascii"), sent.encode("utf-8", "replace"))
