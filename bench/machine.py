#!/usr/bin/env python3
"""What a CPU measurement ran on: the machine line every number in docs/performance.md carries.

The CPU model and the instruction sets that decide kernel speed (AVX2, AVX-512, AMX) as the CPU
reports them, and as the libraries actually use them: oneDNN's ISA (from its own verbose output),
ATen's vector capability, and the measured float32 matrix-multiply peak of MKL (torch.mm) and of
oneDNN. An AVX-512 machine is made to behave like an AVX2-only one with the libraries' switches
(``AVX2_SWITCHES``); ``describe`` shows whether they took effect. Prints JSON when run.
"""

import json
import os
import re
import subprocess
import sys
import time

import torch


# oneDNN's and MKL's documented ISA caps, and ATen's own dispatch override.
AVX2_SWITCHES = {
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
}
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile")


def cpu_model_and_flags():
    model, flags = "unknown CPU", set()
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    return model, [flag for flag in CPU_FLAGS if flag in flags]


def onednn_isa():
    """The ISA oneDNN dispatches to, as its verbose mode reports it (in a child process: the mode
    is read once, when oneDNN starts)."""
    probe = (
        "import torch; ones = torch.ones(2, 2); "
        'torch.ops.mkldnn._linear_pointwise(ones, ones, None, "none", [], "")'
    )
    output = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "ONEDNN_VERBOSE": "1"},
    ).stdout
    found = re.search(r"onednn_verbose,.*?,cpu,isa:(.*)", output)
    return found.group(1).strip() if found else "oneDNN not used"


def onednn_product(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """input . weight^T by oneDNN's linear kernel, torch's own (the one inductor calls on a CPU)."""
    return torch.ops.mkldnn._linear_pointwise(input, weight, None, "none", [], "")


def library_versions():
    config = torch.__config__.show()
    onednn = re.search(r"MKL-DNN (v[\d.]+)", config)
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    return {
        "torch": torch.__version__,
        "onednn": onednn.group(1) if onednn else "none",
        "mkl": mkl.group(1) if mkl else "none",
    }


def matmul_peak_gflops(size=2048, repeats=10):
    """Best float32 rate of a size x size product through MKL (torch.mm) and through oneDNN."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    peaks = {}
    for name, product in (("mkl", torch.mm), ("onednn", onednn_product)):
        product(a, b)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            product(a, b)
            best = min(best, time.perf_counter() - start)
        peaks[name] = 2 * size**3 / best / 1e9
    return peaks


def cpu_class(description):
    """The class a measurement belongs to, by what oneDNN runs (not what the CPU could run)."""
    isa = description["onednn_isa"]
    if "AMX" in isa:
        return "AMX"
    return "AVX-512" if "AVX-512" in isa else "AVX2"


def describe():
    model, flags = cpu_model_and_flags()
    description = {
        "cpu": model,
        "cpu_flags": flags,
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "aten_capability": torch.backends.cpu.get_cpu_capability(),
        "onednn_isa": onednn_isa(),
        **library_versions(),
        "switches": {name: os.environ[name] for name in AVX2_SWITCHES if name in os.environ},
        "matmul_peak_gflops": matmul_peak_gflops(),
    }
    description["class"] = cpu_class(description)
    return description


def machine_line(description):
    switches = " ".join(f"{name}={value}" for name, value in description["switches"].items())
    peaks = description["matmul_peak_gflops"]
    return (
        f"{description['cpu']}, {description['cores']} cores, CPU flags "
        f"{'/'.join(description['cpu_flags']) or 'none of ' + '/'.join(CPU_FLAGS)}; "
        f"oneDNN ISA: {description['onednn_isa']}; ATen {description['aten_capability']}; "
        f"{'switches: ' + switches + '; ' if switches else ''}"
        f"torch {description['torch']}, oneDNN {description['onednn']}, MKL {description['mkl']}, "
        f"{description['threads']} threads; float32 matmul peak {peaks['onednn']:.0f} GFLOP/s "
        f"(oneDNN), {peaks['mkl']:.0f} GFLOP/s (MKL), 2048 x 2048"
    )


if __name__ == "__main__":
    print(json.dumps(describe()))
