#!/usr/bin/env python3
"""Where decoding's peak memory comes from: fairseq-generate as bench/benchmark.py runs it (its
checkpoints, test_2016_flickr, batches of 50, every hypothesis forced to the test set's mean
length), each run in a fresh process, alternating, and in the same processes' kind the checkpoint
loaded alone. Per run: the peak of the bytes malloc has handed out and not yet taken back (glibc's
``mallinfo2``, in use in its heaps plus its mapped blocks, sampled every 2 ms), and the peak
resident memory, which adds what malloc keeps of freed memory (and the program's own pages).

Compared: rnnsearch (the fast path; in a beam search the tensors of source length one row per
sentence, ``modules/beam_rows.py``), rnnsearch with fairseq's layout (every tensor copied for
every beam), rnnsearch in plain PyTorch, and fairseq's lstm. About 6 minutes after
``python -m bench.benchmark`` has left its checkpoints in --work-dir."""

import argparse
import contextlib
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import machine

REPO = Path(__file__).resolve().parent.parent
# way: (checkpoint, environment, beam layout)
WAYS = {
    "rnnsearch": ("rnnsearch", {}, "per sentence"),
    "rnnsearch, fairseq's layout": ("rnnsearch", {}, "per beam"),
    "rnnsearch, plain PyTorch": ("plain", {"BAHDANAU_CPU_FAST_PATH": "plain"}, "per sentence"),
    "lstm": ("lstm", {}, "per beam"),
}


class MallocInfo(ctypes.Structure):
    FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in FIELDS.split()]


def handed_out_mib(libc) -> float:
    info = libc.mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


def sampled(work, libc):
    """Run ``work``; the largest ``handed_out_mib`` seen meanwhile."""
    peak, done = [handed_out_mib(libc)], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], handed_out_mib(libc))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        work()
    finally:
        done.set()
        sampler.join()
    return max(peak[0], handed_out_mib(libc))


def one_run(way, beam, length, work_dir, load_only):
    """In this process: one way's decoding (or loading), its peaks as a JSON line."""
    from fairseq import checkpoint_utils, options
    from fairseq_cli import generate

    from bench.beam_sharing import fairseq_layout
    from bench.benchmark import generation_arguments

    checkpoint, _, layout = WAYS[way]
    save_dir = work_dir / f"checkpoints-{checkpoint}"
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallocInfo
    if load_only:
        import bahdanau_plugin  # noqa: F401  (its safe loading, as --user-dir gives fairseq)

        path = str(save_dir / "checkpoint_last.pt")
        handed_out = sampled(lambda: checkpoint_utils.load_model_ensemble([path]), libc)
    else:
        data_bin = work_dir / "multi30k-bpe" / "data-bin"
        argv = [str(a) for a in generation_arguments(data_bin, save_dir, beam, length)]
        args = options.parse_args_and_arch(options.get_generation_parser(), argv)
        with fairseq_layout() if layout == "per beam" else contextlib.nullcontext():
            handed_out = sampled(lambda: generate.main(args), libc)
    resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"handed_out": handed_out, "resident": resident}))


def run_in_fresh_process(way, beam, length, work_dir, load_only):
    checkpoint, environment, _ = WAYS[way]
    command = [sys.executable, "-m", "bench.decoding_memory", "--one", way, "--beam", str(beam)]
    command += ["--length", str(length), "--work-dir", str(work_dir)]
    command += ["--load-only"] if load_only else []
    result = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(f"error: {way} at beam {beam} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bahdanau-bench"))
    parser.add_argument("--beams", type=int, nargs="+", default=[5, 12])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--length", type=int, default=None, help="default: as bench/benchmark.py")
    parser.add_argument("--one", choices=sorted(WAYS), help=argparse.SUPPRESS)
    parser.add_argument("--beam", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_run(args.one, args.beam, args.length, args.work_dir, args.load_only)
        return
    missing = [
        name
        for name in ("rnnsearch", "plain", "lstm")
        if not (args.work_dir / f"checkpoints-{name}" / "checkpoint_last.pt").exists()
    ]
    if missing:
        sys.exit(
            f"error: no checkpoints for {', '.join(missing)} in {args.work_dir}: run "
            f"python -m bench.benchmark --work-dir {args.work_dir} first"
        )
    if args.length is None:
        from bench.benchmark import average_lengths

        args.length = round(average_lengths(args.work_dir / "multi30k-bpe" / "data-bin", "test")[1])
    print(machine.machine_line(machine.describe()), flush=True)
    runs = [(way, beam, False) for beam in args.beams for way in WAYS]
    runs += [(way, None, True) for way in ("rnnsearch", "lstm")]
    results = {run: [] for run in runs}
    for _ in range(args.repeats):
        for way, beam, load_only in runs:
            results[(way, beam, load_only)].append(
                run_in_fresh_process(way, beam or 1, args.length, args.work_dir, load_only)
            )
    print(
        f"\nmedians of {args.repeats} fresh processes (MiB): "
        "peak handed out by malloc, peak resident"
    )
    for (way, beam, load_only), measured in results.items():
        what = f"{way}, loading the checkpoint alone" if load_only else f"{way}, beam {beam}"
        handed_out = [m["handed_out"] for m in measured]
        resident = [m["resident"] for m in measured]
        print(
            f"{what}: {statistics.median(handed_out):.0f} handed out "
            f"({', '.join(f'{v:.0f}' for v in handed_out)}), {statistics.median(resident):.0f} "
            f"resident ({', '.join(f'{v:.0f}' for v in resident)})"
        )


if __name__ == "__main__":
    main()
