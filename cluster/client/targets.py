"""Which nodes a tool talks to: ``-n "h1:9876;h2:9876"``, ``-c cluster.yaml`` or ``$NAMESRV_ADDR``.

Every tool that talks to nodes (admin verbs, ``broker-sim``, ``audit collect``)
resolves its nodes here, so remote addresses and a local cluster file work the
same everywhere. Order of precedence: ``-n``, then ``-c``, then
``$NAMESRV_ADDR``, then the default ``cluster.yaml``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from cluster.client.connection import parse_addr, split_addrs
from cluster.core.config import ClusterConfig, load_cluster
from cluster.core.errors import UserError

NAMESRV_ENV = "NAMESRV_ADDR"


@dataclass(frozen=True, slots=True)
class NodeAddr:
    """One node: a display name (the cluster file's, else the address) and ``host:port``."""

    name: str
    addr: str

    @property
    def host(self) -> str:
        return parse_addr(self.addr)[0]

    @property
    def port(self) -> int:
        return parse_addr(self.addr)[1]


@dataclass(frozen=True, slots=True)
class NodeSet:
    """The resolved nodes, plus the cluster file when they came from one."""

    nodes: tuple[NodeAddr, ...]
    config: ClusterConfig | None = None

    @property
    def namesrv_addr(self) -> str:
        return ";".join(n.addr for n in self.nodes)

    @property
    def addrs(self) -> list[str]:
        return [n.addr for n in self.nodes]


def parse_namesrv(text: str) -> tuple[NodeAddr, ...]:
    """``"h1:p1;h2:p2"`` -> nodes named by their address; UserError when bad or empty."""
    try:
        addrs = split_addrs(text)
    except ValueError as exc:
        raise UserError(f"-n {text!r}: {exc}") from None
    if not addrs:
        raise UserError(f"-n {text!r}: no address given")
    dupes = sorted({a for a in addrs if addrs.count(a) > 1})
    if dupes:
        raise UserError(f"-n {text!r}: {', '.join(dupes)} given twice")
    return tuple(NodeAddr(a, a) for a in addrs)


def from_config(path: str | None) -> NodeSet:
    cfg = load_cluster(path)
    return NodeSet(tuple(NodeAddr(n.name, n.addr) for n in cfg.nodes), cfg)


def resolve(namesrv: str | None, config: str | None, *, use_env: bool = True) -> NodeSet:
    """The nodes of ``-n`` or ``-c`` (see the module doc for the precedence)."""
    if namesrv:
        return NodeSet(parse_namesrv(namesrv))
    if config is None and use_env and os.environ.get(NAMESRV_ENV):
        return NodeSet(parse_namesrv(os.environ[NAMESRV_ENV]))
    return from_config(config)


def add_source_args(p: argparse.ArgumentParser, *, short_config: bool = True) -> None:
    """``-n ADDRS`` and ``-c/--config FILE`` (mutually exclusive).

    ``short_config=False`` leaves ``-c`` free for mqadmin's meaning of it (a
    cluster name); the file is then only ``--config``.
    """
    src = p.add_mutually_exclusive_group()
    src.add_argument("-n", "--namesrv", metavar="ADDRS",
                     help='node addresses "host:port;host:port" (default: -c, $NAMESRV_ADDR, '
                          "else the default cluster.yaml)")
    flags = ("-c", "--config") if short_config else ("--config",)
    src.add_argument(*flags, dest="config", metavar="CLUSTER_YAML",
                     help="cluster.yaml to read the nodes from")


def resolve_args(args: argparse.Namespace, *, use_env: bool = True) -> NodeSet:
    return resolve(getattr(args, "namesrv", None), getattr(args, "config", None),
                   use_env=use_env)
