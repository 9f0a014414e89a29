"""The lockstep pair: every step goes to the Java NameServer and to the pynamesrv node.

`Pair.check` applies a step to both sides, compares the normalised outcomes and
raises `Divergence` on the first difference that no allowlist entry explains;
the message shows the step, the steps before it and both replies decoded.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.java_diff.allowlist import explain
from tests.java_diff.normalize import canonical, describe, differing_fields
from tests.java_diff.sides import Outcome, Side, Step

HISTORY_SHOWN = 12
# Java expires a broker 120 s after its last registration, scanning every 10 s; a node
# scans every 5 s. Past this age the two sides may be caught between their scans.
MAX_AGE_S = 100.0


class Divergence(AssertionError):
    pass


@dataclass
class Pair:
    java: Side
    ours: Side
    history: list[str] = field(default_factory=list)
    allowed: list[tuple[str, str]] = field(default_factory=list)  # (README row, step label)
    born: float = field(default_factory=time.monotonic)

    def check(self, step: Step, context: str = "") -> tuple[Outcome, Outcome]:
        age = time.monotonic() - self.born
        assert age < MAX_AGE_S, (f"pair is {age:.0f} s old: brokers registered at its start "
                                 "may expire on one side first; use a fresher pair")
        java, ours = self.java.run(step), self.ours.run(step)
        self.history.append(step.label)
        self._compare(step, java, ours, context)
        self.java.settle(step)
        self.ours.settle(step)
        return java, ours

    def run(self, steps: Iterable[Step], context: str = "") -> None:
        for step in steps:
            self.check(step, context)

    def _compare(self, step: Step, java: Outcome, ours: Outcome, context: str) -> None:
        if step.compare == "none":
            return
        with_body = step.compare == "full"
        cj, co = canonical(java, with_body), canonical(ours, with_body)
        if step.compare == "code":
            cj = {"kind": cj["kind"], "code": cj.get("code")}
            co = {"kind": co["kind"], "code": co.get("code")}
        if cj == co:
            return
        row = explain(step, java, ours)
        if row is not None:
            self.allowed.append((row, step.label))
            return
        raise Divergence(self._message(step, java, ours, differing_fields(cj, co), context))

    def _message(self, step: Step, java: Outcome, ours: Outcome, fields: list[str],
                 context: str) -> str:
        n = len(self.history)
        earlier = self.history[-HISTORY_SHOWN - 1:-1]
        request = "" if step.cmd is None else (
            f"  request: code {step.cmd.code} flag {step.cmd.flag} version {step.cmd.version} "
            f"{step.cmd.serialize_type.name} extFields {step.cmd.ext_fields} "
            f"body {(step.cmd.body or b'')[:300]!r}\n")
        return (f"first difference at step {n} {step.label!r} on connection {step.conn!r}"
                f"{' (' + context + ')' if context else ''}: {', '.join(fields)} differ\n"
                f"{request}"
                f"  java:      {describe(java)}\n"
                f"  pynamesrv: {describe(ours)}\n"
                f"  previous steps: {earlier}")

    def close(self) -> None:
        self.java.close_all()
        self.ours.close_all()
