"""``pynamesrv addr-service``: RocketMQ's NameServer address service for any cluster.

    pynamesrv addr-service -n 'h1:9876;h2:9876;h3:9876' --listen 127.0.0.1:8080
    pynamesrv addr-service -c cluster.yaml --listen 127.0.0.1:8080   # what `up` runs

Java clients then use ``-Drocketmq.namesrv.domain=127.0.0.1:8080`` instead of a
``namesrvAddr`` (README "Address service").
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster.audit.cli import add_read_args, read_limits
from cluster.client.targets import add_source_args, parse_namesrv
from cluster.core.argtypes import Subparsers
from cluster.core.config import REPO_DEFAULT, parse_listen
from cluster.core.durations import duration
from cluster.core.errors import UserError

if TYPE_CHECKING:  # the service's modules are imported by the command that runs it
    from cluster.addr.sources import NodeSource

DEFAULT_SUBGROUP = "nsaddr"  # MixAll.WS_DOMAIN_SUBGROUP
log = logging.getLogger("pynamesrv.addr")


def register(sub: Subparsers) -> None:
    p = sub.add_parser("addr-service", help="serve the NameServer address list over HTTP "
                                            "(rocketmq.namesrv.domain)")
    add_source_args(p)
    p.add_argument("--listen", required=True, metavar="HOST:PORT",
                   help="where to serve http://HOST:PORT/rocketmq/SUBGROUP")
    p.add_argument("--subgroup", default=DEFAULT_SUBGROUP,
                   help="rocketmq.namesrv.domain.subgroup of the clients (nsaddr)")
    p.add_argument("--period", type=duration, default=2.0, help="between reads (2s)")
    p.add_argument("--timeout", type=duration, default=1.5, help="per request (1.5s)")
    p.add_argument("--diverged-after", type=duration, default=15.0,
                   help="a listed node leaves after differing from the majority this long "
                        "(15s)")
    add_read_args(p)
    p.set_defaults(func=cmd_addr_service)


def _source(args: argparse.Namespace) -> NodeSource:
    from cluster.addr.sources import FixedNodes, SupervisorNodes

    if args.namesrv:
        return FixedNodes([n.addr for n in parse_namesrv(args.namesrv)])
    return SupervisorNodes(Path(args.config) if args.config else _default_config())


def _default_config() -> Path:
    local = Path("cluster.yaml")
    return local if local.exists() else REPO_DEFAULT


def cmd_addr_service(args: argparse.Namespace) -> int:
    from cluster.addr.http import AddressServer
    from cluster.addr.service import AddressService

    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="ts=%(asctime)s level=%(levelname)s %(message)s")
    host, port = parse_listen(args.listen, "--listen")
    if args.timeout > args.period:
        raise UserError("--timeout must not exceed --period")
    service = AddressService(_source(args), read_limits(args, args.timeout),
                             args.diverged_after, args.period)
    try:
        server = AddressServer(host, port, args.subgroup, lambda: service.published)
    except OSError as exc:
        service.close()
        raise UserError(f"--listen {args.listen}: {exc.strerror or exc}") from None
    stop = threading.Event()
    _stop_on_signals(stop)
    http = threading.Thread(target=server.serve_forever, name="addr-http", daemon=True)
    http.start()
    log.info("event=addr_service url=%s brokers_url=%s-brokers", server.url, server.url)
    print(f"address service: {server.url}", flush=True)
    try:
        service.run(stop)
    finally:
        server.shutdown()
        server.server_close()
        service.close()
    return 0


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(_sig: int, _frame: Any) -> None:
        stop.set()

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, handler)
