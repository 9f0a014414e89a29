"""``python -P tests/compiled_diff.py MODE SEED COUNT OUT``: what the compiled modules'
entry points a client's bytes reach (``worker.compiled``) make of hostile input, for
tests/integration/test_compiled_node.py to compare with the plain modules.

MODE ``compiled`` loads this checkout's build first (and fails unless it did), ``plain``
the sources. The inputs are the fuzz harness's seed frames and SEED's mutations of them,
COUNT in all; each is read as a stream in seeded chunks, then every frame out of it (and
the input itself, as one frame) goes through the frame, header and route-request
decoders with every flag, and names cut from it (lone surrogates and repeats among them)
through the Java orders of ``cluster.core.javaorder``. OUT gets one line per input: the
digest of what came out, exceptions as their type and message.
"""

from __future__ import annotations

import hashlib
import importlib
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker import compiled  # noqa: E402


def _outcome(fn: Callable[[], Any]) -> str:
    try:
        return repr(fn())
    except Exception as exc:  # noqa: BLE001 - what is compared, whatever it is
        return f"{type(exc).__name__}: {exc}"


def main(mode: str, seed: int, count: int, out: Path) -> int:
    if mode == "compiled" and compiled.install() != "compiled":
        print(f"not compiled: {compiled.status()}", file=sys.stderr)
        return 1
    from cluster.core.javaorder import concurrent_order, java_hash
    from cluster.core.protocol.frame import FrameReader, decode_command, split_frame
    from tests.fuzz.targets import chunk_sizes, mutate, random_ops, seed_frames
    from worker.io.route_replies import RequestShapes, header_key, route_request

    loaded = {name: str(importlib.import_module(name).__file__) for name in compiled.MODULES}
    if (mode == "compiled") != all(f.endswith(".so") for f in loaded.values()):
        print(f"{mode}, but loaded {loaded}", file=sys.stderr)
        return 1
    seeds = seed_frames()
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        data = seeds[i] if i < len(seeds) else mutate(rng.choice(seeds), random_ops(rng, 4))
        reader = FrameReader(1 << 16, 1 << 14)
        results: list[str] = []
        frames: list[bytes] = [data[4:]]
        pos = 0
        for size in chunk_sizes(rng.randrange(64), len(data)):
            chunk = data[pos : pos + size]
            pos += size
            try:
                got = reader.feed(chunk)
            except Exception as exc:  # noqa: BLE001
                results.append(f"{type(exc).__name__}: {exc}")
                break
            results.append(repr(got))
            frames += got
        shapes = RequestShapes(False)
        for frame in frames:
            results += [_outcome(lambda f=frame: header_key(f)),
                        _outcome(lambda f=frame: header_key(f, True)),
                        _outcome(lambda f=frame: route_request(f)),
                        _outcome(lambda f=frame: route_request(f, True)),
                        _outcome(lambda f=frame, s=shapes: s.read(f, (header_key(f) or (f,))[0])),
                        _outcome(lambda f=frame: split_frame(f)),
                        _outcome(lambda f=frame: decode_command(f))]
        names = [data[j : j + 1 + j % 13].decode("utf-8", "surrogateescape")
                 for j in range(0, min(len(data), 300), 3)]
        results += [_outcome(lambda n=names: [java_hash(name) for name in n]),
                    _outcome(lambda n=names: concurrent_order(n, 4)),
                    _outcome(lambda n=names: concurrent_order(n))]
        lines.append(hashlib.sha256("\n".join(results).encode()).hexdigest()[:16])
    out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])))
