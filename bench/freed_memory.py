#!/usr/bin/env python3
"""What keeping freed memory for reuse (bahdanau_plugin/cpu_fast_path/freed_memory.py) does to a
training step: rnnsearch and fairseq's lstm, each in a fresh process with glibc's defaults and with
the thresholds the plugin sets, alternating; per step, the median wall time and the minor page
faults (pages the kernel mapped and zeroed), and each process's peak resident memory.

A step is bench/profile_step.py's: forward and backward of one batch of 80 sentences, 16 source
and 17 target tokens, vocabulary 9,642 (its logits, log-softmax and their gradients 52 MiB each).
About 3 minutes on 2 cores with the defaults."""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from argparse import Namespace

from bench import machine

SETTINGS = ("glibc's defaults", "kept for reuse")


def measure(name, setting, steps):
    """In this process: one model's step time, faults per step and peak memory, as a dict."""
    import torch

    from bahdanau_plugin.cpu_fast_path import freed_memory
    from bench.profile_step import batch, build, dictionary, step

    sizes = Namespace(embed=256, hidden=256, maxout=256, vocab=9642, batch=80, source=16, target=17)
    vocabulary = dictionary(sizes.vocab)
    task = Namespace(source_dictionary=vocabulary, target_dictionary=vocabulary)
    model = build(name, sizes, task)
    if setting == SETTINGS[1]:
        freed_memory.keep_freed_memory_for_reuse()  # what fairseq-train with the plugin does
    data = batch(task, sizes, torch.Generator().manual_seed(0))
    for _ in range(3):
        step(model, *data)
    times, faults = [], []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        step(model, *data)
        times.append(time.perf_counter() - start)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before)
    return {
        "step_ms": 1000 * statistics.median(times),
        "faults": statistics.median(faults),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child, args.steps)))
        return
    print(machine.machine_line(machine.describe()), flush=True)
    results = {}
    for _ in range(args.repeats):
        for name in ("rnnsearch", "lstm"):
            for setting in SETTINGS:
                completed = subprocess.run(
                    [sys.executable, "-m", "bench.freed_memory", "--steps", str(args.steps)]
                    + ["--child", name, setting],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                measured = json.loads(completed.stdout.splitlines()[-1])
                results.setdefault((name, setting), []).append(measured)
                print(name, setting, measured, flush=True)
    print("| model, malloc | ms per step | page faults per step | peak MiB |")
    print("|---|---|---|---|")
    for (name, setting), runs in results.items():
        cells = [
            "/".join(f"{run[key]:,.0f}" for run in runs)
            for key in ("step_ms", "faults", "peak_mib")
        ]
        print(f"| {name}, {setting} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
