"""Allocator tuning for processes that move large buffers: the server and the benchmark's workers.

glibc's malloc maps fresh pages from the kernel for every buffer above its mmap threshold (128 KB to
start with) and unmaps them when the buffer is freed. A Seaway batch (hundreds of KB) is copied into
several such buffers on its way (the request, the stored entry, the read reply), so each costs page
faults and zeroing: measured on a 2-core VM, serializing a 512 KB message took 1.06 ms this way and
0.04 ms from the heap. Raising the threshold keeps those buffers in the heap, where freed memory is
reused; raising the trim threshold with it keeps the heap from being handed back and faulted in again.

Either setting given in the environment (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) wins.
"""

from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD_BYTES = 32 << 20
"""Buffers up to this size come from the heap (glibc accepts at most 32 MB on 64-bit systems)."""
TRIM_THRESHOLD_BYTES = 128 << 20
"""Free memory at the top of the heap kept for reuse before it is returned to the kernel."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_large_buffers_in_heap() -> bool:
    """Apply the thresholds above to this process; True if the allocator took them.

    A no-op (False) where the C library is not glibc, or where the environment sets either one."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
