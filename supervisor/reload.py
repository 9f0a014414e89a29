"""``pynamesrv reload``: the running cluster takes the cluster file's node list again.

``plan(old, new)`` (pure) compares two loaded cluster files: the nodes added, removed
and changed (same name, another entry: host, port, data dir or settings), and the
other keys, which only a new ``pynamesrv up`` applies (the control endpoint, the
supervisor's timings and listeners, the brokers' heartbeat). ``Reloads`` applies a plan
to the supervisor: a node added is started at once, once its port and data dir are
checked (one problem refuses the whole reload, and nothing changes); a node removed is
stopped gracefully and forgotten once its process is gone; a node changed is stopped
and started again from its new entry. One reload at a time: while a node of the last
one is still stopping, another is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

from cluster.core.config import ClusterConfig, NodeConfig, check_node_startable, load_cluster
from cluster.core.errors import ConfigError
from supervisor.child import Child


class ReloadError(Exception):
    """The reload is refused; nothing was changed. ``str()`` says why."""


@dataclass(frozen=True)
class Plan:
    added: tuple[NodeConfig, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[NodeConfig, ...] = ()
    ignored: tuple[str, ...] = ()

    def summary(self) -> dict[str, list[str]]:
        return {"added": [n.name for n in self.added], "removed": list(self.removed),
                "changed": [n.name for n in self.changed], "ignored": list(self.ignored)}


def plan(old: ClusterConfig, new: ClusterConfig) -> Plan:
    before = {n.name: n for n in old.nodes}
    after = {n.name: n for n in new.nodes}
    ignored = [f"supervisor.{f.name}" for f in fields(old.supervisor)
               if getattr(old.supervisor, f.name) != getattr(new.supervisor, f.name)]
    if old.control != new.control:
        ignored.insert(0, "control")
    if old.broker_heartbeat_ms != new.broker_heartbeat_ms:
        ignored.append("brokers.heartbeat_ms")
    return Plan(added=tuple(n for name, n in after.items() if name not in before),
                removed=tuple(name for name in before if name not in after),
                changed=tuple(n for name, n in after.items()
                              if name in before and before[name] != n),
                ignored=tuple(ignored))


class Host(Protocol):
    cfg: ClusterConfig
    def now(self) -> float: ...
    def nodes(self) -> list[Child]: ...
    def add_node(self, node: NodeConfig) -> Child: ...
    def forget(self, child: Child) -> None: ...


class Reloads:
    """The supervisor's reloads: apply one, then finish it as its nodes stop."""

    def __init__(self, host: Host, emit: Callable[..., None]) -> None:
        self.host = host
        self.emit = emit
        self.leaving: dict[str, NodeConfig | None] = {}  # name -> its new entry, if changed

    def reload(self) -> dict[str, Any]:
        if self.leaving:
            raise ReloadError("the last reload is still stopping "
                              f"{', '.join(sorted(self.leaving))}; try again when it is done")
        host = self.host
        try:
            new = load_cluster(host.cfg.path)
            p = plan(host.cfg, new)
            for n in p.added:
                check_node_startable(new, n.name)
        except ConfigError as exc:
            raise ReloadError(str(exc)) from None
        now = host.now()
        by_name = {c.name: c for c in host.nodes()}
        for n in p.added:
            host.add_node(n).start(now)
        for name in p.removed:
            self.leaving[name] = None
            by_name[name].stop(now)
        for n in p.changed:
            self.leaving[n.name] = n
            by_name[n.name].stop(now)
        host.cfg = new
        self.emit("reload", **{k: ",".join(v) or "-" for k, v in p.summary().items()})
        return p.summary()

    def tick(self, now: float) -> None:
        """Forget the nodes that left; start a changed one again from its new entry."""
        for c in [c for c in self.host.nodes() if c.name in self.leaving and not c.alive]:
            entry = self.leaving.pop(c.name)
            self.host.forget(c)
            if entry is not None:
                self.host.add_node(entry).start(now)
