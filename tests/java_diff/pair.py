"""The lockstep pair: every step goes to the Java NameServer and to the pynamesrv node.

`Pair.check` applies a step to both sides, compares the normalised outcomes and
raises `Divergence` on the first difference that no allowlist entry explains;
the message shows the step, the steps before it and both replies decoded. A pair
in record mode (`record`: the release it compares with, one the node does not follow
yet) adds each such difference to `tests.java_diff.record` and goes on.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.java_diff import record as recorder
from tests.java_diff.allowlist import VERSION_ROW, align_version, explain
from tests.java_diff.normalize import canonical, describe, differing_fields
from tests.java_diff.sides import Outcome, Side, Step

HISTORY_SHOWN = 12
# Java expires a broker 120 s after its last registration, scanning every 10 s; a node
# scans every 5 s. Past this age the two sides may be caught between their scans.
MAX_AGE_S = 100.0


class Divergence(AssertionError):
    pass


class TooOld(AssertionError):
    pass


@dataclass
class Pair:
    java: Side
    ours: Side
    history: list[str] = field(default_factory=list)
    allowed: list[tuple[str, str]] = field(default_factory=list)  # (README row, step label)
    born: float = field(default_factory=time.monotonic)
    record: str | None = None  # a release whose differences are recorded, not raised

    def check(self, step: Step, context: str = "") -> tuple[Outcome, Outcome]:
        age = self.age
        if age >= MAX_AGE_S:
            raise TooOld(f"pair is {age:.0f} s old: brokers registered at its start may expire "
                         "on one side first; use a fresher pair")
        java, ours = self.java.run(step), self.ours.run(step)
        self.history.append(step.label)
        self._compare(step, java, ours, context)
        for side in (self.java, self.ours):
            try:
                side.settle(step)
            except AssertionError as exc:
                if self.record is None:
                    raise
                recorder.add(recorder.Difference(self.record, context, step.label, "settle",
                                                 str(exc) if side is self.java else "settled",
                                                 str(exc) if side is self.ours else "settled"))
        return java, ours

    @property
    def age(self) -> float:
        return time.monotonic() - self.born

    def run(self, steps: Iterable[Step], context: str = "") -> None:
        """Every step in lockstep; in record mode, a pair grown too old ends the run with
        a recorded line (the differences met so far stay recorded)."""
        for step in steps:
            try:
                self.check(step, context)
            except TooOld as exc:
                if self.record is None:
                    raise
                recorder.add(recorder.Difference(self.record, context, step.label,
                                                 "not run further", str(exc), ""))
                return

    def _compare(self, step: Step, java: Outcome, ours: Outcome, context: str) -> None:
        if step.compare == "none":
            return
        aligned = align_version(java, ours)
        if aligned is not None:
            self.allowed.append((VERSION_ROW, step.label))
            java = aligned
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
        fields = differing_fields(cj, co)
        if self.record is not None:
            recorder.add(recorder.Difference(self.record, context, step.label, ", ".join(fields),
                                             describe(java), describe(ours)))
            return
        raise Divergence(self._message(step, java, ours, fields, context))

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
