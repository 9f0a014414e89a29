"""``pynamesrv up|status|stop|start|restart|kill|pause|resume``: run and control the cluster."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from cluster.core.argtypes import Subparsers
from cluster.core.config import ClusterConfig, load_cluster
from cluster.core.durations import duration
from cluster.core.errors import UserError
from cluster.core.procs import python_module
from supervisor.child import ChildSpec
from supervisor.control_client import ControlClient, ControlError, ControlUnavailable
from supervisor.main import Supervisor, child_env, format_fields
from supervisor.render import format_table

BROKER_SIM = "broker-sim"
ADDR_SERVICE = "addr-service"
REDRAW_S = 0.5
POLL_S = 0.1
GONE_POLL_TIMEOUT_S = 0.5  # a supervisor that is still there answers `status` well within this
KILL_WAIT_S = 10.0  # how long `kill` waits to see the node die by default
_commands: dict[str, argparse.ArgumentParser] = {}


def register(sub: Subparsers) -> None:
    global _commands
    _commands = sub.choices
    up = sub.add_parser("up", help="start the cluster in the foreground (Ctrl-C stops it)")
    _common(up, json=False)
    up.add_argument("--brokers", type=int, default=0, metavar="N",
                    help="also run the broker simulator with N brokers once nodes are ready")
    up.set_defaults(func=cmd_up)
    st = sub.add_parser("status", help="show every node's pid, state, uptime and restarts")
    _common(st)
    st.set_defaults(func=cmd_status)
    stop = sub.add_parser("stop", help="stop the whole cluster, or one node when NODE is given")
    _common(stop)
    stop.add_argument("node", nargs="?", metavar="NODE")
    _wait_flags(stop)
    stop.set_defaults(func=cmd_stop)
    for name, text in (("start", "start a stopped or failed node"),
                       ("restart", "stop a node gracefully and start it again"),
                       ("pause", "SIGSTOP a node's whole process group"),
                       ("resume", "SIGCONT a paused node")):
        p = sub.add_parser(name, help=text)
        _common(p)
        p.add_argument("node", metavar="NODE")
        if name in ("start", "restart"):
            _wait_flags(p)
        p.set_defaults(func=cmd_node, action=name)
    kill = sub.add_parser("kill", help="send a signal (default KILL) to a node's process group")
    _common(kill)
    kill.add_argument("node", metavar="NODE")
    kill.add_argument("--signal", "-s", default="KILL", help="signal name or number (KILL)")
    _wait_flags(kill)
    kill.set_defaults(func=cmd_kill)
    reload = sub.add_parser("reload", help="take the cluster file's node list again: start "
                                           "added nodes, stop removed ones")
    _common(reload)
    reload.set_defaults(func=cmd_reload)


def _common(p: argparse.ArgumentParser, json: bool = True) -> None:
    p.add_argument("-c", "--config", metavar="FILE",
                   help="cluster file (default ./cluster.yaml, else the repository's)")
    if json:
        p.add_argument("--json", action="store_true", help="print the reply as JSON")
        p.add_argument("--timeout", type=duration, default=5.0,
                       help="how long to wait for the supervisor to answer (5s)")


def _wait_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="return once the request is accepted")
    p.add_argument("--wait-timeout", type=duration, default=None, metavar="D",
                   help="how long to wait for the node to get there, e.g. 30s (default: "
                        "60s; the stop grace + 5s for `stop`; 10s for `kill`)")


# ------------------------------------------------------------------ up


def cmd_up(args: argparse.Namespace) -> int:
    cfg = load_cluster(args.config, for_start=True)
    if args.brokers < 0:
        raise UserError("--brokers must be 0 or more")
    if args.brokers and BROKER_SIM not in _commands:
        raise UserError(f"--brokers needs the `pynamesrv {BROKER_SIM}` command,"
                        " which this installation does not have")
    view = LiveView(cfg, sys.stdout.isatty())
    sup = Supervisor(cfg, emit=view.event)
    sup.add_nodes()
    sup.start_all()
    late = [hook for hook in (_addr_service(cfg), _broker_sim(cfg, args.brokers)) if hook]

    def on_tick(s: Supervisor) -> None:
        for hook in late:
            hook.tick(s)
        view.tick(s)

    rc = sup.run(on_tick)
    view.final(sup)
    return rc


def _child_spec(cfg: ClusterConfig, name: str, *args: str) -> ChildSpec:
    """``pynamesrv NAME ARGS -c CLUSTER_FILE`` as a managed child logging to the data dir."""
    return ChildSpec(name=name, argv=[*python_module("cluster.cli"), name, "-c", str(cfg.path),
                                      *args],
                     cwd=cfg.data_dir, log_path=cfg.data_dir / f"{name}.log", env=child_env(),
                     kind=name)


def _addr_service(cfg: ClusterConfig) -> LateChild | None:
    """``supervisor.addr_service``: ``pynamesrv addr-service`` as a managed child, following
    this supervisor's nodes through the control endpoint (README "Address service")."""
    if cfg.supervisor.addr_service is None:
        return None
    if ADDR_SERVICE not in _commands:
        raise UserError(f"supervisor.addr_service needs the `pynamesrv {ADDR_SERVICE}` command,"
                        " which this installation does not have")
    return LateChild(_child_spec(cfg, ADDR_SERVICE, "--listen", cfg.supervisor.addr_service),
                     nodes_booted)


def _broker_sim(cfg: ClusterConfig, brokers: int) -> LateChild | None:
    """``--brokers N``: the broker simulator, once every node is ready."""
    if not brokers:
        return None
    return LateChild(_child_spec(cfg, BROKER_SIM, "--brokers", str(brokers)),
                     lambda sup: sup.ready_announced)


def nodes_booted(sup: Supervisor) -> bool:
    """No node is starting any more: each answers, or has crashed, stopped or failed."""
    return not any(c.state == "starting" for c in sup.nodes())


class LateChild:
    """A managed child started once ``due(supervisor)`` holds, not with the nodes: the
    address service once they have booted (it follows them, and its own start-up would
    only slow theirs), the broker simulator once every node is ready."""

    def __init__(self, spec: ChildSpec, due: Callable[[Supervisor], bool]) -> None:
        self.spec = spec
        self.due = due
        self.started = False

    def tick(self, sup: Supervisor) -> None:
        if self.started or sup.shutting_down or not self.due(sup):
            return
        self.started = True
        sup.add_child(self.spec).start(sup.now())


class LiveView:
    """What `up` shows: a redrawn table on a terminal, event lines otherwise."""

    def __init__(self, cfg: ClusterConfig, tty: bool) -> None:
        self.cfg = cfg
        self.tty = tty
        self.recent: deque[str] = deque(maxlen=8)
        self.next_draw = 0.0
        self.log_path = cfg.data_dir / "supervisor.log"
        self._setup_logging()

    def _setup_logging(self) -> None:
        log = logging.getLogger("pynamesrv.supervisor")
        log.setLevel(logging.INFO)
        log.propagate = False
        fmt = logging.Formatter("ts=%(asctime)s level=%(levelname)s %(message)s")
        handlers: list[logging.Handler] = [logging.FileHandler(self.log_path)]
        if not self.tty:
            handlers.append(logging.StreamHandler(sys.stderr))
        for h in handlers:
            h.setFormatter(fmt)
            log.addHandler(h)
        self.log = log

    def event(self, event: str, **fields: Any) -> None:
        line = f"event={event} {format_fields(fields)}"
        self.log.info(line)
        self.recent.append(time.strftime("%H:%M:%S ") + line)
        if event == "cluster_ready" and not self.tty:
            print(f"cluster ready: namesrvAddr={self.cfg.namesrv_addr()} "
                  f"control={self.cfg.control}", flush=True)

    def tick(self, sup: Supervisor) -> None:
        now = time.monotonic()
        if not self.tty or now < self.next_draw:
            return
        self.next_draw = now + REDRAW_S
        rows = [c.status(sup.now()) for c in sup.children()]
        lines = [f"pynamesrv cluster {sup.cfg.path}",
                 f"namesrvAddr {sup.cfg.namesrv_addr()}   control {sup.cfg.control}", "",
                 format_table(rows), "", *self.recent, "",
                 "stopping..." if sup.shutting_down else "Ctrl-C stops the cluster"]
        sys.stdout.write("\x1b[H\x1b[2J" + "\n".join(lines) + "\n")
        sys.stdout.flush()

    def final(self, sup: Supervisor) -> None:
        print(format_table([c.status(sup.now()) for c in sup.children()]))
        print("cluster stopped", flush=True)


# ------------------------------------------------------------------ control


def _client(args: argparse.Namespace) -> ControlClient:
    return ControlClient(load_cluster(args.config).control, args.timeout)


def _emit(args: argparse.Namespace, reply: dict[str, Any], text: str) -> None:
    if args.json:
        print(orjson.dumps(reply, option=orjson.OPT_INDENT_2).decode())
    else:
        print(text)


def cmd_status(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call("status")
    rows = reply["nodes"] + reply.get("children", [])
    _emit(args, reply, format_table(rows))
    return 0


def _node_state(n: dict[str, Any]) -> str:
    pid = n.get("pid") or "-"
    extra = f", last exit: {n['last_exit']}" if n.get("last_exit") else ""
    return f"{n['state']} (pid {pid}, restarts {n['restarts']}{extra})"


def _node_line(n: dict[str, Any]) -> str:
    return f"{n['name']}: {_node_state(n)}"


def cmd_node(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call(args.action, args.node)
        old_pid = reply["node"].get("pid")
        target: dict[str, Callable[[dict[str, Any]], bool]] = {
            "start": _is_running, "stop": _is_stopped,
            "restart": lambda n: n.get("pid") != old_pid and _is_running(n)}
        if args.action in target and args.wait:
            reply = _wait_for(client, args, target[args.action])
    _emit(args, reply, _node_line(reply["node"]))
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    """Signal the node's process group, then show the node once the supervisor saw it die
    (its pid changed), or say that it was signalled and still runs."""
    with _client(args) as client:
        reply = client.call("kill", args.node, signal=args.signal)
        old = reply["node"]
        sent = f"{args.node}: sent {reply['signal']} to process group {old.get('pgid')}"
        if not args.wait:
            _emit(args, reply, sent)
            return 0
        timeout = args.wait_timeout or KILL_WAIT_S
        try:
            reply = {**reply, **_wait_for(client, args, lambda n: n.get("pid") != old["pid"],
                                          timeout)}
        except ControlError:
            node = client.node_status(args.node)
            reply = {**reply, "node": node}
            _emit(args, reply, f"{sent}; still {node['state']} (pid {node.get('pid')}) "
                               f"after {timeout:g}s")
            return 0
    _emit(args, reply, f"{sent}; now {_node_state(reply['node'])}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    if args.node:
        args.action = "stop"
        return cmd_node(args)
    cfg = load_cluster(args.config)
    with ControlClient(cfg.control, args.timeout) as client:
        reply = client.call("shutdown")
        if args.wait:
            _wait_gone(client, args.wait_timeout or cfg.supervisor.stop_grace_s + 5)
    _emit(args, reply, "cluster stopping" if not args.wait else "cluster stopped")
    return 0


def cmd_reload(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call("reload")
    text = "; ".join(f"{k} {', '.join(reply[k]) or '-'}"
                     for k in ("added", "removed", "changed", "ignored"))
    _emit(args, reply, f"reloaded: {text}")
    return 0


def _is_running(n: dict[str, Any]) -> bool:
    if n["state"] == "failed":
        raise ControlError(f"{n['name']}: failed ({n.get('last_exit')})")
    return bool(n["state"] == "running")


def _is_stopped(n: dict[str, Any]) -> bool:
    return n["state"] in ("stopped", "failed") and not n.get("pid")


def _wait_for(client: ControlClient, args: argparse.Namespace,
              done: Callable[[dict[str, Any]], bool],
              timeout: float | None = None) -> dict[str, Any]:
    deadline = time.monotonic() + (timeout or args.wait_timeout or 60.0)
    while True:
        node = client.node_status(args.node)
        if done(node):
            return {"ok": True, "node": node}
        if time.monotonic() >= deadline:
            raise ControlError(f"{args.node}: still {node['state']} after waiting")
        time.sleep(POLL_S)


def _wait_gone(client: ControlClient, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    client.set_timeout(min(client.timeout, GONE_POLL_TIMEOUT_S))
    while time.monotonic() < deadline:
        try:
            client.request("status")
        except ControlUnavailable:
            return
        time.sleep(POLL_S)
    raise ControlError(f"the supervisor still answers after {timeout:g}s")
