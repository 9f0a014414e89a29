"""The C heap of a node's workers: large messages reuse freed memory.

With glibc's defaults a block freed from the heap's top is given back to the kernel once
more than twice the last large block lies free there, and the next large block is
faulted in page by page, zeroed, all over again. A worker handling a few 2 MB topic lists
or registrations at once then spends half its time in page faults (the I/O worker of
``e-all-topics`` took 1.3 million a run, 770 a list). Blocks of up to ``HEAP_BLOCK_MAX``
therefore come from the heap, and only more than ``TRIM_ABOVE`` free at its top goes
back: a worker keeps at most that much it does not use.
"""

from __future__ import annotations

import ctypes

HEAP_BLOCK_MAX = 4 << 20
TRIM_ABOVE = 16 << 20

# glibc's mallopt(3) parameters
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_heap() -> bool:
    """Set this process's malloc thresholds (inherited by the processes it forks); False
    where the C library has no such settings."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCK_MAX)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE))
