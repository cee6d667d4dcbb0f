"""glibc's malloc told to keep large freed blocks for reuse instead of returning them to the kernel.

By default glibc serves every block over its mmap threshold (dynamic, at most 32 MiB) with a fresh
mapping, and returns free memory at the top of its heap to the kernel past its trim threshold (twice
the mmap threshold). A training step on CPU allocates and frees the same large tensors at every
step: the output layer's logits, fairseq's log-softmax over them and their gradients are each 52 MiB
at the benchmark's sizes (1,360 target words x 9,642 words), 480 MiB at the paper's. Each fresh
mapping is then faulted in and zeroed by the kernel page by page as it is first written, at every
step, a large share of a training step's time, for fairseq's lstm as much as for these models
(docs/performance-log.md, 2026-11-24, 68f8703). With both thresholds at REUSE_BYTES the
same blocks are reused from the heap, already mapped.

The peak stays what the step needs; what changes is that freed memory up to REUSE_BYTES stays
with the process for the next step instead of going back to the kernel in between. The setting is
the process's: fairseq_patches.CHANGES makes it when fairseq-train (or fairseq-hydra-train) runs
with the plugin. A process that only translates (fairseq-generate, fairseq-interactive, the
server), whose large blocks glibc already reuses (under 32 MiB at a search's row counts) and which
should give memory back between requests, and any other program keep glibc's defaults.
"""

import ctypes
import logging
import os
from typing import Optional

from .speed import setting

logger = logging.getLogger(__name__)

# mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

REUSE_BYTES = 1 << 30

# Where a user tunes glibc's malloc themselves (its environment variables and tunables, or another
# allocator preloaded), their choice is kept.
GLIBC_MALLOC_VARIABLES = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
)


def malloc_tuned_by_user(environ=os.environ) -> bool:
    return (
        any(variable in environ for variable in GLIBC_MALLOC_VARIABLES)
        or "glibc.malloc." in environ.get("GLIBC_TUNABLES", "")
        or "malloc" in environ.get("LD_PRELOAD", "")  # jemalloc, tcmalloc, mimalloc
    )


def glibc() -> Optional[ctypes.CDLL]:
    """The C library this process runs with, if it is glibc (whose mallopt this sets)."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:  # no C library to open by the process's own symbols (Windows)
        return None
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return None
    return libc


def keep_freed_memory_for_reuse(libc: Optional[ctypes.CDLL] = None, environ=os.environ) -> bool:
    """Sets glibc's mmap and trim thresholds to REUSE_BYTES, unless the user tuned malloc or the
    fast path is set to plain (then the plugin changes nothing about speed); whether it did."""
    if setting.eager() or malloc_tuned_by_user(environ):
        return False
    libc = libc if libc is not None else glibc()
    if libc is None:
        return False
    # The mmap threshold first: setting either fixes both, and a trim threshold alone would leave
    # the mmap threshold fixed at its 128 KiB start, slower than glibc's default.
    if not libc.mallopt(M_MMAP_THRESHOLD, REUSE_BYTES):  # a glibc that caps the threshold lower
        logger.info("glibc refused an mmap threshold of %d bytes: its defaults kept", REUSE_BYTES)
        return False
    libc.mallopt(M_TRIM_THRESHOLD, REUSE_BYTES)
    return True
