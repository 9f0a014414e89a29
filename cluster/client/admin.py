"""The mqadmin-named admin verbs of ``pynamesrv`` against the nodes of ``-n`` or ``-c``.

Reads (clusterList, topicRoute, topicList, topicClusterList, getKvConfig) ask
one node, chosen as the Java client chooses. Writes and per-node views
(wipeWritePerm, addWritePerm, deleteTopic, the KV and config verbs,
getBrokerMemberGroup, getNamesrvConfig) go to every node and show one result
per node. Text output is what mqadmin prints for the same cluster, byte for byte
where mqadmin's own output is the same from one run to the next (``admin_format``,
``admin_cluster``, ``admin_json``): 5.x's mqadmin by default, 4.9.8's with
``--mqadmin 4.9`` (they differ in ``clusterList`` and ``topicRoute``). ``--json``
prints one JSON document instead. Exit status: 0 on success, 1 when a node failed
or answered with an error, 2 on bad input (``UserError``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from cluster.client import admin_cluster
from cluster.client import admin_format as fmt
from cluster.client import admin_requests as req
from cluster.client.admin_json import RELEASES, route_json, route_table
from cluster.client.credentials import add_credential_args, credentials_from_args
from cluster.client.errors import ClientError
from cluster.client.fanout import FanoutResult, NodeOutcome
from cluster.client.nsclient import NameServerClient
from cluster.client.targets import add_source_args, resolve_args
from cluster.core.durations import duration
from cluster.core.errors import UserError

Verb = Callable[[NameServerClient, argparse.Namespace], int]
Lines = Callable[[str, Any], list[str]]


# ------------------------------------------------------------------ output


def plain(obj: Any) -> Any:
    """Dataclasses, enums, sets and exceptions as JSON-ready values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in obj]
    if isinstance(obj, BaseException):
        return f"{type(obj).__name__}: {obj}"
    if hasattr(obj, "value") and hasattr(obj, "name") and not isinstance(obj, (int, str)):
        return obj.value
    return obj


def dump(obj: Any) -> str:
    return orjson.dumps(plain(obj), option=orjson.OPT_INDENT_2).decode()


def outcome_doc(o: NodeOutcome) -> dict[str, Any]:
    return {"status": o.status.value, "value": o.value,
            "error": None if o.error is None else str(o.error),
            "elapsed_ms": round(o.elapsed * 1000, 3)}


def emit(lines: list[str]) -> None:
    for line in lines:
        print(line)


def report(result: FanoutResult, args: argparse.Namespace, ok: Lines,
           failed: Callable[[str], str] | None = None, done: list[str] | None = None,
           order: list[str] | None = None) -> int:
    """Per-node lines (``ok`` or ``failed``) in ``order`` (default: the order the nodes
    were given), then ``done`` when every node succeeded.

    stdout has mqadmin's lines only (a failed node's ``failed`` line where mqadmin prints
    one); each failed node's error is one line on stderr. Exit 1 when any node failed.
    """
    outcomes = in_order(result, order or args.node_set.addrs)
    if args.json:
        print(dump({a: outcome_doc(o) for a, o in outcomes}))
        return 0 if result.all_ok else 1
    for addr, outcome in outcomes:
        if outcome.ok:
            emit(ok(addr, outcome.value))
            continue
        if failed:
            print(failed(addr))
        print(failure_line(addr, outcome), file=sys.stderr)
    if result.all_ok and done:
        emit(done)
    return 0 if result.all_ok else 1


def in_order(result: FanoutResult, addrs: list[str]) -> list[tuple[str, NodeOutcome]]:
    rank = {a: i for i, a in enumerate(addrs)}
    return sorted(result.outcomes.items(), key=lambda kv: rank.get(kv[0], len(rank)))


def report_failures(result: FanoutResult, addrs: list[str]) -> None:
    """One stderr line per failed address."""
    for addr, outcome in in_order(result, addrs):
        if not outcome.ok:
            print(failure_line(addr, outcome), file=sys.stderr)


def failure_line(addr: str, outcome: NodeOutcome) -> str:
    """``pynamesrv: ADDR: STATUS: ERROR``, the address once (a client error names it too)."""
    error = outcome.error
    text = "" if error is None else str(error).removeprefix(f"{addr}: ")
    return f"pynamesrv: {addr}: {outcome.status.value}" + (f": {text}" if text else "")


def text_arg(args: argparse.Namespace, name: str, flag: str) -> str:
    """An option's value trimmed as mqadmin trims it; an empty one is bad input."""
    value = str(getattr(args, name)).strip()
    if not value:
        raise UserError(f"{flag} must not be empty")
    return value


# ------------------------------------------------------------------- reads


def cluster_list(c: NameServerClient, args: argparse.Namespace) -> int:
    try:
        while True:
            _cluster_list_once(c, args)
            if args.interval is None:
                return 0
            sys.stdout.flush()
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


def _cluster_list_once(c: NameServerClient, args: argparse.Namespace) -> None:
    info = plain(c.get_cluster_info())
    only = None if args.cluster_name is None else text_arg(args, "cluster_name", "-c")
    addrs = [row[3] for row in admin_cluster.rows(info, only)]
    stats = {} if args.no_broker_stats else req.broker_runtime_stats(c, addrs, args.timeout)
    if args.json:
        print(dump({**info, "brokerRuntimeStats": stats}))
    else:
        emit(admin_cluster.lines(info, stats, args.mqadmin, more=args.more, only=only))


def topic_route(c: NameServerClient, args: argparse.Namespace) -> int:
    topic = text_arg(args, "topic", "-t")
    if args.json:
        print(dump(c.get_route(topic)))
        return 0
    doc = req.route_doc(c, topic)
    if not args.list:
        print(route_json(doc, args.mqadmin))
        return 0
    try:
        for line in route_table(doc):
            print(line)
    except KeyError as exc:
        print(f"pynamesrv: broker {exc.args[0]} of topic {topic} has no queue data",
              file=sys.stderr)
        return 1
    return 0


def topic_list(c: NameServerClient, args: argparse.Namespace) -> int:
    topics = plain(c.get_all_topics())
    names = fmt.topic_list(topics.get("topicList", []) if isinstance(topics, dict) else topics)
    print(dump(names)) if args.json else emit(names)
    return 0


def topic_cluster_list(c: NameServerClient, args: argparse.Namespace) -> int:
    topic = text_arg(args, "topic", "-t")
    route = c.get_route(topic)
    if not route.get("brokerDatas"):
        print(f"pynamesrv: topic {topic} has no broker", file=sys.stderr)
        return 1
    clusters = fmt.topic_clusters(route, plain(c.get_cluster_info()))
    print(dump(clusters)) if args.json else emit(clusters)
    return 0


def get_kv(c: NameServerClient, args: argparse.Namespace) -> int:
    ns, key = text_arg(args, "namespace", "-s"), text_arg(args, "key", "-k")
    value = c.get_kv(ns, key)
    if args.json:
        print(dump({"namespace": ns, "key": key, "value": value}))
    elif value is None:
        print(f"No config item, Namespace: {ns} Key: {key}", file=sys.stderr)
    else:
        print(value)
    return 0 if value is not None else 1


# --------------------------------------------------------- every node


def update_kv(c: NameServerClient, args: argparse.Namespace) -> int:
    ns, key = text_arg(args, "namespace", "-s"), text_arg(args, "key", "-k")
    return report(c.put_kv(ns, key, text_arg(args, "value", "-v")), args, no_lines,
                  done=["create or update kv config to namespace success."])


def delete_kv(c: NameServerClient, args: argparse.Namespace) -> int:
    ns, key = text_arg(args, "namespace", "-s"), text_arg(args, "key", "-k")
    return report(c.delete_kv(ns, key), args, no_lines,
                  done=["delete kv config from namespace success."])


def no_lines(addr: str, value: Any) -> list[str]:
    """A node's success prints nothing of its own (mqadmin prints one closing line)."""
    return []


def get_namesrv_config(c: NameServerClient, args: argparse.Namespace) -> int:
    return report(req.namesrv_config(c, args.all), args, fmt.config_lines,
                  order=fmt.config_order(args.node_set.addrs))


def update_namesrv_config(c: NameServerClient, args: argparse.Namespace) -> int:
    key, value = text_arg(args, "key", "-k"), text_arg(args, "value", "-v")
    # mqadmin lists the -n text; without -n (from $NAMESRV_ADDR) an empty string.
    nodes = args.node_set
    given = args.namesrv or (None if nodes.config is None else nodes.namesrv_addr)
    return report(c.update_namesrv_config({key: value}), args, no_lines,
                  done=fmt.update_namesrv_config_done(given, key, value))


def _perm(verb: str, call: Callable[[NameServerClient, str], FanoutResult]) -> Verb:
    """wipeWritePerm / addWritePerm: one line per node with the count of topics changed."""
    def run(c: NameServerClient, args: argparse.Namespace) -> int:
        broker = text_arg(args, "broker_name", "-b")
        return report(call(c, broker), args,
                      lambda a, n: [fmt.perm_line(verb, broker, a, int(n))],
                      lambda a: fmt.perm_line(verb, broker, a, None))
    return run


wipe_write_perm = _perm("wipe", NameServerClient.wipe_write_perm)
add_write_perm = _perm("add", NameServerClient.add_write_perm)


def delete_topic(c: NameServerClient, args: argparse.Namespace) -> int:
    """As mqadmin: the topic off the cluster's masters, then off every node; a broker
    that fails stops it before the nodes are asked."""
    topic, cluster = text_arg(args, "topic", "-t"), text_arg(args, "cluster_name", "-c")
    masters = fmt.cluster_masters(plain(c.get_cluster_info()), cluster)
    if masters is None and not args.json:
        sys.stdout.write(fmt.NO_CLUSTER)  # mqadmin ends it with no line break
    brokers = req.delete_topic_in_brokers(c, masters or [], topic)
    nodes = c.delete_topic(topic, cluster) if brokers.all_ok else None
    if args.json:
        print(dump({"brokers": {a: outcome_doc(o) for a, o in in_order(brokers, [])},
                    "nodes": None if nodes is None else
                    {a: outcome_doc(o) for a, o in in_order(nodes, args.node_set.addrs)}}))
        return 0 if nodes is not None and nodes.all_ok else 1
    if nodes is None:
        report_failures(brokers, [])
        return 1
    print(fmt.delete_topic_brokers_done(topic, cluster))
    return report(nodes, args, no_lines, done=[fmt.delete_topic_done(topic)])


def get_broker_member_group(c: NameServerClient, args: argparse.Namespace) -> int:
    cluster, broker = text_arg(args, "cluster_name", "-c"), text_arg(args, "broker_name", "-b")

    def lines(addr: str, group: dict[str, Any]) -> list[str]:
        body = fmt.member_group_lines(cluster, broker, group["brokerAddrs"])
        return fmt.per_node([(addr, body)])

    return report(req.broker_member_group(c, cluster, broker), args, lines)


# ------------------------------------------------------------------ parser


def run_verb(fn: Verb) -> Callable[[argparse.Namespace], int]:
    """Resolve the nodes, open a client, run ``fn``; a ClientError is exit 1."""
    def command(args: argparse.Namespace) -> int:
        nodes = args.node_set = resolve_args(args)
        client = NameServerClient(nodes.namesrv_addr, timeout=args.timeout,
                                  credentials=credentials_from_args(args))
        try:
            return fn(client, args)
        except ClientError as exc:
            print(f"pynamesrv: {exc.kind} error: {exc}", file=sys.stderr)
            return 1
        finally:
            client.close()
    return command


def common_args(p: argparse.ArgumentParser, *, short_config: bool = True) -> None:
    add_source_args(p, short_config=short_config)
    p.add_argument("--timeout", type=duration, default=3.0,
                   help="time per call, e.g. 500ms or 3s (3s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_credential_args(p)


def _verb(sub: argparse._SubParsersAction, name: str, fn: Verb, help_text: str,
          short_config: bool = True) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text)
    common_args(p, short_config=short_config)
    p.add_argument("--mqadmin", choices=RELEASES, default=RELEASES[-1],
                   help="print as this release's mqadmin does (5; 4.9 differs in "
                        "clusterList and topicRoute)")
    p.set_defaults(func=run_verb(fn))
    return p


def register(sub: argparse._SubParsersAction) -> None:
    p = _verb(sub, "clusterList", cluster_list,
              "list clusters and brokers, with each broker's runtime stats; "
              "the cluster file is --config here", short_config=False)
    p.add_argument("-c", "--clusterName", dest="cluster_name", default=None,
                   help="only this cluster (as 5.x's mqadmin)")
    p.add_argument("-m", "--moreStats", dest="more", action="store_true",
                   help="message totals of yesterday and today instead")
    p.add_argument("-i", "--interval", type=duration, default=None, metavar="D",
                   help="print again every D (e.g. 5 or 5s) until Ctrl-C")
    p.add_argument("--no-broker-stats", action="store_true",
                   help="do not ask the brokers for their runtime stats")
    p = _verb(sub, "topicRoute", topic_route, "show a topic's route")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-l", "--list", action="store_true", help="as a table")
    _verb(sub, "topicList", topic_list, "list every topic (mqadmin's -c cluster model is not "
          "supported); the cluster file is --config here", short_config=False)
    p = _verb(sub, "topicClusterList", topic_cluster_list, "clusters that serve a topic")
    p.add_argument("-t", "--topic", required=True)
    for name, fn, help_text, needs_value in (
        ("getKvConfig", get_kv, "get one KV config item", False),
        ("updateKvConfig", update_kv, "put a KV config item on every node", True),
        ("deleteKvConfig", delete_kv, "delete a KV config item on every node", False),
    ):
        p = _verb(sub, name, fn, help_text)
        p.add_argument("-s", "--namespace", required=True)
        p.add_argument("-k", "--key", required=True)
        if needs_value:
            p.add_argument("-v", "--value", required=True)
    p = _verb(sub, "getNamesrvConfig", get_namesrv_config, "show every node's configuration")
    p.add_argument("--all", action="store_true",
                   help="also the node's own pynamesrv settings (sends all=true)")
    p = _verb(sub, "updateNamesrvConfig", update_namesrv_config,
              "update one configuration key on every node")
    p.add_argument("-k", "--key", required=True)
    p.add_argument("-v", "--value", required=True)
    for name, perm_verb, verb in (("wipeWritePerm", wipe_write_perm, "Wipe"),
                                  ("addWritePerm", add_write_perm, "Add")):
        p = _verb(sub, name, perm_verb, f"{verb} write perm of a broker on every node")
        p.add_argument("-b", "--brokerName", dest="broker_name", required=True)
    p = _verb(sub, "deleteTopic", delete_topic,
              "delete a topic from the cluster's master brokers, then from every node; "
              "the cluster file is --config here", short_config=False)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--clusterName", dest="cluster_name", required=True)
    p = _verb(sub, "getBrokerMemberGroup", get_broker_member_group,
              "members of one broker group, per node; the cluster file is --config here",
              short_config=False)
    p.add_argument("-c", "--clusterName", dest="cluster_name", required=True)
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True)
