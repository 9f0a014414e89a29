"""The accounts of a RocketMQ ``plain_acl.yml``: global white list and access keys.

The file's layout is RocketMQ 4.9's::

    globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.*]
    accounts:
      - accessKey: RocketMQ
        secretKey: 12345678
        whiteRemoteAddress: 192.168.1.*
        admin: false

Topic and group permissions (``defaultTopicPerm``, ``topicPerms``, ...) and
``dataVersion`` are accepted and ignored: a NameServer has no topics or groups to
guard. Keys are read as RocketMQ reads them (``secretKey: 12345678`` is a YAML
number and means the text ``12345678``); access and secret keys must be longer
than 6 characters, as RocketMQ requires. A file RocketMQ would refuse raises
``AclFileError``, whose message names the entry but never shows a secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster.core.protocol.acl import KEY_MIN_LENGTH
from worker.business.acl.addresses import Matcher, PatternError, compile_pattern


class AclFileError(ValueError):
    """The accounts file cannot be used; the message names the problem, never a secret."""


@dataclass(frozen=True, slots=True)
class Account:
    access_key: str
    secret_key: str = field(repr=False)
    white: Matcher = field(repr=False)
    admin: bool = False


@dataclass(frozen=True, slots=True)
class Accounts:
    global_white: tuple[Matcher, ...] = ()
    by_key: Mapping[str, Account] = field(default_factory=dict)

    def whitelisted(self, host: str) -> bool:
        return any(match(host) for match in self.global_white)


def parse_accounts(text: str) -> Accounts:
    """The accounts of a ``plain_acl.yml`` text; AclFileError when it is not usable."""
    import yaml  # only nodes with aclEnable read one: not at every node's start

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise AclFileError(f"not valid YAML{where}") from None
    if data is None:
        return Accounts()
    if not isinstance(data, dict):
        raise AclFileError("the file must be a mapping (globalWhiteRemoteAddresses, accounts)")
    white = tuple(_pattern(p, f"globalWhiteRemoteAddresses[{i}]")
                  for i, p in enumerate(_list(data, "globalWhiteRemoteAddresses")))
    by_key: dict[str, Account] = {}
    for i, entry in enumerate(_list(data, "accounts")):
        account = _account(entry, f"accounts[{i}]")
        if account.access_key in by_key:
            raise AclFileError(f"accounts[{i}].accessKey: {account.access_key} is given twice")
        by_key[account.access_key] = account
    return Accounts(white, by_key)


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclFileError(f"{key}: expected a list")
    return value


def _pattern(value: Any, where: str) -> Matcher:
    if value is not None and not isinstance(value, str):
        raise AclFileError(f"{where}: expected an address pattern, got {value!r}")
    try:
        return compile_pattern(value)
    except PatternError as exc:
        raise AclFileError(f"{where}: {exc}") from None


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise AclFileError(f"{where}.{key}: missing or not a string")
    text = str(value)
    if len(text) < KEY_MIN_LENGTH:
        raise AclFileError(f"{where}.{key}: must be longer than {KEY_MIN_LENGTH - 1} characters")
    return text


def _flag(entry: dict[str, Any], where: str) -> bool:
    value = entry.get("admin", False)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if value is None or isinstance(value, bool):
        return bool(value)
    raise AclFileError(f"{where}.admin: expected true or false, got {value!r}")


def _account(entry: Any, where: str) -> Account:
    if not isinstance(entry, dict):
        raise AclFileError(f"{where}: expected a mapping with accessKey and secretKey")
    return Account(_text(entry, "accessKey", where), _text(entry, "secretKey", where),
                   _pattern(entry.get("whiteRemoteAddress"), f"{where}.whiteRemoteAddress"),
                   _flag(entry, where))
