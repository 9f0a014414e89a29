"""Control commands, one handler each: ``handler(host, request) -> reply``.

A handler validates its request and acts without blocking; long actions
(stop, restart) are started here and finish in the supervisor loop, so the
reply says what was started. Errors are raised as CommandError and become
``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, Protocol

from supervisor.child import Child
from supervisor.reload import ReloadError, Reloads


class CommandError(Exception):
    """A request the supervisor refuses; the message goes back to the caller."""


class Host(Protocol):
    def now(self) -> float: ...
    def children(self) -> list[Child]: ...
    def nodes(self) -> list[Child]: ...
    def begin_shutdown(self, why: str) -> None: ...
    @property
    def shutting_down(self) -> bool: ...
    @property
    def reloads(self) -> Reloads: ...


Handler = Callable[[Host, dict[str, Any]], dict[str, Any]]
BLOCKED_SIGNALS = {"STOP": "pause", "CONT": "resume", "TSTP": "pause"}


def _child(host: Host, req: dict[str, Any]) -> Child:
    name = req.get("node")
    if not isinstance(name, str) or not name:
        raise CommandError(f"{req.get('cmd')}: a node name is required")
    for c in host.children():
        if c.name == name:
            return c
    names = ", ".join(c.name for c in host.children())
    raise CommandError(f"no node named {name!r} (known: {names})")


def _alive(c: Child, action: str) -> Child:
    if not c.alive:
        raise CommandError(f"{action} {c.name}: not running (state {c.state})")
    return c


def _not_shutting_down(host: Host) -> None:
    if host.shutting_down:
        raise CommandError("the supervisor is shutting down")


def _result(host: Host, c: Child, **extra: Any) -> dict[str, Any]:
    return {"ok": True, "node": c.status(host.now()), **extra}


def cmd_status(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    now = host.now()
    return {"ok": True, "shutting_down": host.shutting_down,
            "nodes": [c.status(now) for c in host.nodes()],
            "children": [c.status(now) for c in host.children() if c.spec.kind != "node"]}


def cmd_stop(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    c = _child(host, req)
    c.stop(host.now())
    return _result(host, c)


def cmd_start(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    _not_shutting_down(host)
    c = _child(host, req)
    if c.alive and c.want_up:
        raise CommandError(f"start {c.name}: already {c.state}")
    c.start(host.now())
    return _result(host, c)


def cmd_restart(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    _not_shutting_down(host)
    c = _child(host, req)
    c.stop(host.now(), restart=True)
    return _result(host, c)


def parse_signal(value: Any) -> signal.Signals:
    text = str(value if value is not None else "KILL").upper().removeprefix("SIG")
    try:
        sig = signal.Signals(int(text)) if text.isdigit() else signal.Signals["SIG" + text]
    except (KeyError, ValueError) as exc:
        raise CommandError(f"unknown signal {value!r}") from exc
    short = sig.name.removeprefix("SIG")
    if short in BLOCKED_SIGNALS:
        raise CommandError(f"use {BLOCKED_SIGNALS[short]} instead of kill --signal {short}")
    return sig


def cmd_kill(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    sig = parse_signal(req.get("signal"))
    c = _alive(_child(host, req), "kill")
    c.kill(sig)
    return _result(host, c, signal=sig.name)


def cmd_pause(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    c = _alive(_child(host, req), "pause")
    if c.state == "paused":
        raise CommandError(f"pause {c.name}: already paused")
    c.pause()
    return _result(host, c)


def cmd_resume(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    c = _alive(_child(host, req), "resume")
    if c.state != "paused":
        raise CommandError(f"resume {c.name}: not paused (state {c.state})")
    c.resume(host.now())
    return _result(host, c)


def cmd_reload(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    """Take the cluster file's node list again (supervisor.reload)."""
    _not_shutting_down(host)
    try:
        return {"ok": True, **host.reloads.reload()}
    except ReloadError as exc:
        raise CommandError(f"reload: {exc}") from None


def cmd_shutdown(host: Host, req: dict[str, Any]) -> dict[str, Any]:
    host.begin_shutdown("shutdown requested by control")
    return {"ok": True, "shutting_down": True}


HANDLERS: dict[str, Handler] = {
    "status": cmd_status, "stop": cmd_stop, "start": cmd_start, "restart": cmd_restart,
    "kill": cmd_kill, "pause": cmd_pause, "resume": cmd_resume, "shutdown": cmd_shutdown,
    "reload": cmd_reload,
}


def dispatch(host: Host, req: Any) -> dict[str, Any]:
    """Answer any request: a reply with ``ok`` for every input, never an exception."""
    if not isinstance(req, dict):
        return {"ok": False, "error": "request must be a JSON object"}
    handler = HANDLERS.get(req.get("cmd"))  # type: ignore[arg-type]
    if handler is None:
        return {"ok": False, "error": f"unknown command {req.get('cmd')!r} "
                                      f"(known: {', '.join(HANDLERS)})"}
    try:
        return handler(host, req)
    except CommandError as exc:
        return {"ok": False, "error": str(exc)}
