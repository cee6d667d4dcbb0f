"""The class of CPU the fast path runs on, for the choices whose winner differs between classes.

Measured in docs/performance.md (``bench/machine.py`` tells the classes apart, ``bench/kernels.py``
times each choice): on CPUs with AVX-512, oneDNN's float32 products run at about twice MKL's rate,
on AVX2-only CPUs at about the same rate. A choice that pays a cost to reach oneDNN (a loop written
in Python) therefore wins on the first class and loses on the second.
"""

import functools

import torch


@functools.lru_cache(maxsize=None)
def has_avx512() -> bool:
    """Whether torch's CPU kernels run with AVX-512 here (AVX-512 and AMX CPUs), as ATen dispatches
    them: False on AVX2-only CPUs, and on an AVX-512 CPU capped with ``ATEN_CPU_CAPABILITY=avx2``
    (with oneDNN's and MKL's caps, bench/machine.py's ``AVX2_SWITCHES``)."""
    return torch.backends.cpu.get_cpu_capability() == "AVX512"
