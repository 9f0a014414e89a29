"""Coverage-guided fuzzing of the frame reader, the header decoders and every body decoder.

    python -m tests.fuzz.run --inputs 1000000 [--seed 1] [--max-len 8192] [--keep DIR]

The starting corpus is every captured frame (``../shared``) in each input kind of
:func:`tests.fuzz.targets.run_input`, plus synthetic frames and bodies. With atheris
installed the inputs come from libFuzzer, guided by coverage of ``cluster.core.protocol``
and ``decode_member_group``; without it, from a seeded random mutator (no coverage).
One process does the fuzzing (a child, because libFuzzer exits the process when it is
done); this one prints the summary. Every input on which a decoder raised anything but
its documented error is a crash: it is saved with its traceback under ``DIR/crashes``
(``--keep DIR``, else a temporary directory that is removed) and the exit status is 1.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

INSTRUMENTED = ["cluster.core.protocol", "cluster.client.admin_requests"]
PER_SIGNATURE = 5  # inputs saved per distinct crash
DICTIONARY = (
    '"{"', '"}"', '"["', '"]"', '":"', '","', '"\\""', "\"'\"", '"\\\\u"', '"\\\\"',
    '"null"', '"true"', '"false"', '"-"', '"1e999"', '"\\x00\\x00\\x00"', '"\\x7f\\xff\\xff\\xff"',
    '"\\x01\\x00\\x00"', '"\\xff\\xff\\xff\\xff"', '"extFields"', '"code"', '"opaque"',
    '"language"', '"remark"', '"counter"', '"timestamp"', '"stateVersion"',
    '"topicConfigSerializeWrapper"', '"topicConfigTable"', '"dataVersion"',
    '"filterServerList"', '"brokerAddrs"', '"brokerDatas"', '"queueDatas"',
    '"SINGLE_TAG"', '"MULTI_TAG"', '"attributes"', '"brokerMemberGroup"', '"table"',
    '"topicList"', '"\\\\ud83d\\\\ude00"', '"\\xc2\\x85"', '"\\xe2\\x80\\xa8"',
)


# ------------------------------------------------------------------ the fuzzing process


class CrashLog:
    """Records inputs that made a decoder raise an undocumented error."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.seen: dict[str, int] = {}

    def record(self, data: bytes, exc: BaseException) -> None:
        tb = "".join(traceback.format_exception(exc))
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        sig = hashlib.sha1(f"{type(exc).__name__} {where}".encode()).hexdigest()[:12]
        n = self.seen.get(sig, 0)
        self.seen[sig] = n + 1
        with open(self.dir / "crashes.log", "a") as log:
            log.write(f"{sig} {type(exc).__name__} {where}\n")
        if n < PER_SIGNATURE:
            (self.dir / f"crash-{sig}-{n}.bin").write_bytes(data)
            (self.dir / f"crash-{sig}-{n}.txt").write_text(f"input: {data.hex()}\n\n{tb}")


def _checked(crashes: CrashLog) -> Callable[[bytes], None]:
    from tests.fuzz.targets import Escaped, run_input

    def one(data: bytes) -> None:
        try:
            run_input(data)
        except Escaped as exc:
            crashes.record(data, exc.exc)
        except AssertionError as exc:  # a decoded command broke its own contract
            crashes.record(data, exc)

    return one


def child_atheris(crash_dir: Path, libfuzzer_args: list[str]) -> None:
    import atheris  # type: ignore[import-not-found]

    with atheris.instrument_imports(include=INSTRUMENTED):
        import cluster.client.admin_requests  # noqa: F401
        import cluster.core.protocol.admin_bodies  # noqa: F401
        import cluster.core.protocol.body_common  # noqa: F401
        import cluster.core.protocol.fastjson  # noqa: F401
        import cluster.core.protocol.frame  # noqa: F401
        import cluster.core.protocol.lenient  # noqa: F401
        import cluster.core.protocol.properties  # noqa: F401
        import cluster.core.protocol.register_body  # noqa: F401
        import cluster.core.protocol.route_bodies  # noqa: F401
    target = _checked(CrashLog(crash_dir))
    atheris.Setup([sys.argv[0], *libfuzzer_args], target)
    atheris.Fuzz()


def random_engine(inputs: int, seed: int, max_len: int, crash_dir: Path) -> None:
    """The fallback when atheris is missing: seeded mutations of the corpus, no guidance."""
    from tests.fuzz.targets import mutate, random_ops, seed_inputs

    seeds = seed_inputs()
    target = _checked(CrashLog(crash_dir))
    rng = random.Random(seed)
    for i in range(inputs):
        if i < len(seeds):
            data = seeds[i]
        elif rng.random() < 0.05:
            data = rng.randbytes(rng.randrange(max_len // 16 + 2))
        else:
            base = rng.choice(seeds)
            data = base[:1] + mutate(base[1:], random_ops(rng, 4))
        target(data[:max_len])
    print(f"Done {inputs} runs", file=sys.stderr)


# ------------------------------------------------------------------ the summary


@dataclass
class Summary:
    engine: str
    seed: int
    seeds: int
    inputs: int = 0
    cov: int | None = None
    ft: int | None = None
    corpus: int | None = None
    wall: float = 0.0
    finished: bool = False
    crashes: int = 0
    signatures: dict[str, str] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    fuzzer_error: str = ""

    def lines(self) -> list[str]:
        out = [f"engine: {self.engine}, seed {self.seed}, {self.seeds} seed inputs",
               f"inputs run: {self.inputs}",
               f"crashes: {self.crashes} ({len(self.signatures)} distinct)"]
        out += [f"  {sig}: {what}" for sig, what in sorted(self.signatures.items())]
        out += self.examples
        if self.fuzzer_error:
            out.append(f"fuzzer error: {self.fuzzer_error}")
        if self.cov is not None:
            out.append(f"coverage: cov {self.cov} edges, ft {self.ft} features, "
                       f"corpus {self.corpus} inputs (libFuzzer, over {', '.join(INSTRUMENTED)})")
        else:
            out.append("coverage: not measured (random engine; install atheris for coverage)")
        rate = self.inputs / max(self.wall, 1e-9)
        out.append(f"wall time: {self.wall:.1f} s ({rate:.0f} inputs/s)")
        return out

    @property
    def ok(self) -> bool:
        return self.finished and self.crashes == 0 and not self.fuzzer_error


_DONE = re.compile(r"^#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
_PULSE = re.compile(r"^#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
_RUNS = re.compile(r"^Done (\d+) runs")


def _parse(summary: Summary, line: str) -> None:
    if m := (_DONE.match(line) or _PULSE.match(line)):
        summary.inputs = max(summary.inputs, int(m[1]))
        summary.cov, summary.ft, summary.corpus = int(m[2]), int(m[3]), int(m[4])
    elif m := _RUNS.match(line):
        summary.inputs = int(m[1])
        summary.finished = True
    elif "ERROR: libFuzzer" in line or "==ERROR" in line:
        summary.fuzzer_error = line.strip()


def _count_crashes(summary: Summary, crash_dir: Path) -> None:
    log = crash_dir / "crashes.log"
    if not log.exists():
        return
    for line in log.read_text().splitlines():
        sig, _, what = line.partition(" ")
        summary.crashes += 1
        summary.signatures[sig] = what
    for example in sorted(crash_dir.glob("crash-*-0.txt")):
        text = example.read_text()
        summary.examples.append(f"--- {example.name}\n{text[:4000]}")


def have_atheris() -> bool:
    try:
        import atheris  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def fuzz(inputs: int, seed: int, max_len: int, work: Path, engine: str,
         verbose: bool = False) -> Summary:
    from tests.fuzz.targets import seed_inputs

    seeds = seed_inputs()
    corpus, crash_dir = work / "corpus", work / "crashes"
    corpus.mkdir(parents=True, exist_ok=True)
    for data in seeds:
        (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data[:max_len])
    (work / "codec.dict").write_text("\n".join(DICTIONARY) + "\n")
    summary = Summary(engine, seed, len(seeds))
    # -reload=0: libFuzzer's reload of the corpus directory (every second by default) runs
    # its files again and counts them, so the number of inputs run would depend on timing
    argv = [sys.executable, "-m", "tests.fuzz.run", "--child", engine, "--crash-dir",
            str(crash_dir), "--inputs", str(inputs), "--seed", str(seed),
            "--max-len", str(max_len), "--",
            f"-runs={inputs}", f"-seed={seed}", f"-max_len={max_len}", "-timeout=20", "-reload=0",
            "-rss_limit_mb=3072", f"-dict={work / 'codec.dict'}", "-print_final_stats=1",
            str(corpus)]
    start = time.monotonic()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    with subprocess.Popen(argv, cwd=root, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          text=True, errors="replace", env=env) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            _parse(summary, line)
            if verbose:
                sys.stderr.write(line)
        rc = proc.wait()
    summary.wall = time.monotonic() - start
    if engine == "random":
        summary.inputs = inputs if summary.finished else 0
    if rc != 0 and not summary.fuzzer_error:
        summary.fuzzer_error = f"fuzzing process exited with status {rc}"
    _count_crashes(summary, crash_dir)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=1_000_000, help="inputs to run")
    ap.add_argument("--seed", type=int, default=1, help="fuzzer seed (runs are repeatable)")
    ap.add_argument("--max-len", type=int, default=8192, help="largest input in bytes")
    ap.add_argument("--engine", choices=("auto", "atheris", "random"), default="auto")
    ap.add_argument("--keep", type=Path, help="keep corpus and crashes in this directory")
    ap.add_argument("--verbose", action="store_true", help="relay the fuzzer's own output")
    ap.add_argument("--child", choices=("atheris", "random"), help=argparse.SUPPRESS)
    ap.add_argument("--crash-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("libfuzzer", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child == "atheris":
        child_atheris(args.crash_dir, args.libfuzzer)
        return 0
    if args.child == "random":
        random_engine(args.inputs, args.seed, args.max_len, args.crash_dir)
        return 0
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if have_atheris() else "random"
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        summary = fuzz(args.inputs, args.seed, args.max_len, args.keep, engine, args.verbose)
    else:
        work = Path(tempfile.mkdtemp(prefix="pynamesrv-fuzz-"))
        try:
            summary = fuzz(args.inputs, args.seed, args.max_len, work, engine, args.verbose)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if engine == "atheris":
        import atheris  # type: ignore[import-not-found]

        summary.engine = f"atheris {getattr(atheris, '__version__', '')} (libFuzzer)".replace(
            "  ", " ")
    print("\n".join(summary.lines()))
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
