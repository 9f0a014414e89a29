"""Remote address patterns of a RocketMQ ``plain_acl.yml`` (``RemoteAddressStrategyFactory`` 4.9).

Forms, as RocketMQ 4.9 reads them:

* blank or absent: matches nothing;
* ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*``: matches every address;
* one address, IPv4 or IPv6 (``192.168.0.1``, ``::1``);
* a list: ``192.168.0.1,192.168.0.2`` or ``192.168.0.{1,2}`` (also ``2001:db8::{1,2}``);
* a range in one IPv4 part (the first of parts 2 to 4 that is ``*`` or ``A-B``, the
  parts before it fixed; RocketMQ ignores the parts after it): ``192.168.*.*``,
  ``192.168.1.1-100``, ``10.10.103.*``;
* an IPv6 range in the last group (``2001:db8::1-ff``, ``2001:db8::*``), or in the
  last but one group followed by ``:*`` (``2001:db8::1-ff:*``).

A pattern RocketMQ refuses (an invalid address, a part outside 0–255, a range
with start > end) raises ``PatternError``. Matching takes the remote host without
its port.

Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

Matcher = Callable[[str], bool]
_EVERYTHING = ("*", "*.*.*.*", "*:*:*:*:*:*:*:*")


class PatternError(ValueError):
    """A remote address pattern RocketMQ would refuse."""


def _ipv4(text: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        return None


def _ipv6(text: str) -> ipaddress.IPv6Address | None:
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    found = _ipv4(text) or _ipv6(text)
    if found is None:
        raise PatternError(f"{text!r} is not an IPv4 or IPv6 address")
    return found


def _as_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    return _ipv4(host) or _ipv6(host)


@dataclass(frozen=True, slots=True)
class _OneOf:
    addresses: frozenset[ipaddress.IPv4Address | ipaddress.IPv6Address]

    def __call__(self, host: str) -> bool:
        return _as_address(host) in self.addresses


@dataclass(frozen=True, slots=True)
class _Range:
    """Fixed leading parts (``head``), then one part within ``lo``–``hi``."""

    v6: bool
    head: tuple[int, ...]
    lo: int
    hi: int

    def __call__(self, host: str) -> bool:
        addr = _ipv6(host) if self.v6 else _ipv4(host)
        if addr is None:
            return False
        parts = [int(g, 16) for g in addr.exploded.split(":")] if self.v6 else list(addr.packed)
        n = len(self.head)
        return tuple(parts[:n]) == self.head and self.lo <= parts[n] <= self.hi


def _never(host: str) -> bool:
    return False


def _always(host: str) -> bool:
    return True


def compile_pattern(pattern: str | None) -> Matcher:
    """The matcher of one pattern; PatternError when RocketMQ 4.9 would refuse it."""
    text = (pattern or "").strip()
    if not text:
        return _never
    if text in _EVERYTHING:
        return _always
    if text.endswith("}"):
        return _OneOf(frozenset(_address(a) for a in _braced(text)))
    if "," in text:
        return _OneOf(frozenset(_address(a.strip()) for a in text.split(",") if a.strip()))
    if "*" in text or "-" in text:
        return _v6_range(text) if ":" in text else _v4_range(text)
    return _OneOf(frozenset({_address(text)}))


def _braced(text: str) -> list[str]:
    """``192.168.0.{1,2}`` -> ``192.168.0.1``, ``192.168.0.2``."""
    sep = ":" if ":" in text else "."
    last = text.rsplit(sep, 1)[-1]
    if not last.startswith("{") or (sep == "." and text.count(".") < 3):
        raise PatternError(f"{text!r}: a {{...}} list must be the last part of an address")
    prefix = text[: text.index("{")]
    return [prefix + item.strip() for item in last[1:-1].split(",") if item.strip()]


def _bounds(part: str, top: int, base: int, text: str) -> tuple[int, int] | None:
    """(lo, hi) of a ranged part (``*`` or ``A-B``), None for a fixed part."""
    part = part.strip()
    if part == "*":
        return 0, top
    if "-" not in part:
        return None
    lo_text, _, hi_text = part.partition("-")
    try:
        lo, hi = int(lo_text, base), int(hi_text, base)
    except ValueError:
        raise PatternError(f"{text!r}: bad range {part!r}") from None
    if not 0 <= lo <= hi <= top:
        raise PatternError(f"{text!r}: range {part!r} is outside 0–{top} or reversed")
    return lo, hi


def _v4_range(text: str) -> _Range:
    parts = text.split(".")
    if len(parts) != 4:
        raise PatternError(f"{text!r}: an IPv4 pattern has four parts")
    for index in (1, 2, 3):
        bounds = _bounds(parts[index], 255, 10, text)
        if bounds is not None:
            return _Range(False, _v4_head(parts[:index], text), *bounds)
    raise PatternError(f"{text!r}: no range in the second to fourth part")


def _v4_head(parts: list[str], text: str) -> tuple[int, ...]:
    try:
        head = tuple(int(p.strip()) for p in parts)
    except ValueError:
        raise PatternError(f"{text!r}: the parts before the range must be numbers") from None
    if not all(0 <= p <= 255 for p in head):
        raise PatternError(f"{text!r}: a part is outside 0–255")
    return head


def _v6_range(text: str) -> _Range:
    star = text.find("*")
    if star not in (-1, len(text) - 1):
        raise PatternError(f"{text!r}: '*' must end an IPv6 pattern")
    trailing = text.endswith(":*") and "-" in text  # "...:1-ff:*": the range comes before
    prefix, sep, ranged = (text[:-2] if trailing else text).rpartition(":")
    bounds = _bounds(ranged, 0xFFFF, 16, text) if sep else None
    if bounds is None:
        raise PatternError(f"{text!r}: the range must be the last group (or before ':*')")
    return _Range(True, _v6_head(prefix, 6 if trailing else 7, text), *bounds)


def _v6_head(prefix: str, width: int, text: str) -> tuple[int, ...]:
    """The fixed groups before the ranged one; with ``::``, filled up to ``width`` groups."""
    try:
        if "::" in prefix or prefix.endswith(":"):
            full = ipaddress.IPv6Address(prefix + ":0" * (8 - width))
            return tuple(int(g, 16) for g in full.exploded.split(":"))[:width]
        head = tuple(int(g, 16) for g in prefix.split(":"))
    except ValueError:
        raise PatternError(f"{text!r}: bad IPv6 groups before the range") from None
    if len(head) > width or not all(0 <= g <= 0xFFFF for g in head):
        raise PatternError(f"{text!r}: bad IPv6 groups before the range")
    return head


def remote_host(peer: str) -> str:
    """The host of ``host:port`` (IPv6 brackets removed, IPv4-mapped IPv6 as IPv4)."""
    host = peer.rpartition(":")[0] if ":" in peer else peer
    host = host.strip("[]")
    mapped = _ipv6(host)
    if mapped is not None and mapped.ipv4_mapped is not None:
        return str(mapped.ipv4_mapped)
    return host
