"""``pynamesrv peer``: install the real RocketMQ peers and start them on loopback.

The start commands replace themselves with the peer (``exec``), so the process a
caller starts is the JVM (or the Rust or Go program) itself: its pid, its process group,
its exit code. Every peer listens on 127.0.0.1 only and keeps its logs in ``--dir``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cluster.core.argtypes import Subparsers
from cluster.core.errors import UserError
from cluster.peers import cache, gobuild, install, java, maven, native, rust
from cluster.peers.catalog import DEFAULT_RELEASE, RELEASES, Release, release


def register(sub: Subparsers) -> None:
    p = sub.add_parser("peer", help="the real RocketMQ peers: install them, start them")
    peer = p.add_subparsers(dest="peer_command", metavar="PEER_COMMAND")
    peer.required = True

    inst = peer.add_parser("install", help="install peers into the cache (idempotent)")
    install.add_arguments(inst)
    inst.set_defaults(func=install.run)

    peer.add_parser("status", help="what is installed, at which version, where").set_defaults(
        func=_status)

    ns = _java_parser(peer, "namesrv", "the Java NameServer")
    ns.add_argument("--port", type=int, required=True)
    ns.add_argument("--heap", default="256m")
    ns.add_argument("--gc", choices=("serial", "g1"), default="serial")
    ns.set_defaults(func=_namesrv)

    br = _java_parser(peer, "broker", "a Java broker (--id 0: master, else slave)")
    br.add_argument("--namesrv", default="", help="'h1:9876;h2:9876' (empty: none)")
    br.add_argument("--name", required=True)
    br.add_argument("--cluster", default="DefaultCluster")
    br.add_argument("--id", type=int, default=0)
    br.add_argument("--port", type=int, required=True,
                    help="listen port; the fast port is PORT-2, the HA port PORT+1")
    br.add_argument("--heap", default="512m")
    br.add_argument("--jvm-option", action="append", default=[],
                    help="extra JVM option, e.g. -Drocketmq.namesrv.domain=HOST:PORT")
    br.set_defaults(func=_broker)

    px = _java_parser(peer, "proxy", "the 5.x proxy in cluster mode")
    px.add_argument("--namesrv", required=True)
    px.add_argument("--cluster", default="DefaultCluster")
    px.add_argument("--grpc-port", type=int, required=True)
    px.add_argument("--remoting-port", type=int, required=True)
    px.add_argument("--heap", default="512m")
    px.set_defaults(func=_proxy)

    adm = peer.add_parser("mqadmin", help="the release's mqadmin: ARGS after --")
    adm.add_argument("--release", default=DEFAULT_RELEASE, choices=sorted(RELEASES))
    adm.add_argument("--home", type=Path, help="its ROCKETMQ_HOME and log directory "
                     "(default: a folder in the cache)")
    adm.add_argument("--no-keys", action="store_true",
                     help="no conf/tools.yml: mqadmin signs nothing")
    adm.set_defaults(func=_mqadmin, passthrough=True)

    rs = peer.add_parser("rust-namesrv", help="the Rust NameServer (after install --rust)")
    rs.add_argument("--port", type=int, required=True)
    rs.add_argument("--dir", type=Path, required=True)
    rs.set_defaults(func=_rust)

    go = peer.add_parser("goprobe", help="the Go client probe: ARGS after --")
    go.set_defaults(func=_goprobe, passthrough=True)


def _java_parser(peer: Subparsers, name: str, what: str
                 ) -> argparse.ArgumentParser:
    p = peer.add_parser(name, help=f"{what}, on 127.0.0.1")
    p.add_argument("--release", default=DEFAULT_RELEASE, choices=sorted(RELEASES))
    p.add_argument("--dir", type=Path, required=True, help="its files and logs")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a configuration value (repeatable)")
    return p


def _settings(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _release(args: argparse.Namespace, component: str) -> Release:
    rel = release(args.release)
    why = java.missing(rel, component)
    if why:
        raise UserError(why)
    return rel


def _exec(cmd: java.PeerCommand) -> int:
    cmd.cwd.mkdir(parents=True, exist_ok=True)
    os.chdir(cmd.cwd)
    sys.stdout.flush()
    os.execvpe(cmd.argv[0], cmd.argv, cmd.environ())


def _port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise UserError(f"port {value} is out of range")
    return value


def _namesrv(args: argparse.Namespace) -> int:
    rel = _release(args, "namesrv")
    return _exec(java.namesrv(rel, _port(args.port), args.dir.resolve(), args.heap,
                              _settings(args.set), args.gc))


def _broker(args: argparse.Namespace) -> int:
    rel = _release(args, "broker")
    _port(args.port - 2)
    return _exec(java.broker(rel, args.namesrv, args.dir.resolve(), args.name, args.cluster,
                             args.id, _port(args.port), args.heap, _settings(args.set),
                             args.jvm_option))


def _proxy(args: argparse.Namespace) -> int:
    rel = _release(args, "proxy")
    return _exec(java.proxy(rel, args.dir.resolve(), args.namesrv, args.cluster,
                            _port(args.grpc_port), _port(args.remoting_port), args.heap))


def _mqadmin(args: argparse.Namespace) -> int:
    rel = _release(args, "tools")
    rest = list(args.passthrough_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    home = (args.home or cache.root() / "mqadmin-home" / rel.name).resolve()
    return _exec(java.mqadmin(rel, home, rest, tools_yml=not args.no_keys))


def _rust(args: argparse.Namespace) -> int:
    if rust.installed() is None:
        raise UserError(rust.missing())
    argv = rust.namesrv_argv(_port(args.port), args.dir.resolve())
    return _exec(java.PeerCommand(argv, args.dir.resolve(),
                                  {"LD_PRELOAD": str(native.bindlo())}))


def _goprobe(args: argparse.Namespace) -> int:
    binary = gobuild.installed()
    if binary is None:
        raise UserError(gobuild.missing())
    rest = list(args.passthrough_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    sys.stdout.flush()
    os.execv(str(binary), [str(binary), *rest])


def _status(args: argparse.Namespace) -> int:
    print(f"cache: {cache.root()}")
    for rel in RELEASES.values():
        for comp, version in rel.versions:
            jars = maven.installed(rel, comp)
            state = f"{len(jars)} jars" if jars else "not installed"
            print(f"java {rel.name:<4} rocketmq-{comp:<8} {version:<6} {state}")
    why = cache.unavailable_reason("java")
    if why:
        print(f"java: last install could not reach Maven Central: {why}")
    print(f"go   probe       {gobuild.installed() or gobuild.missing()}")
    print(f"rust namesrv     {rust.installed() or rust.missing()}")
    return 0
