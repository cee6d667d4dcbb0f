#!/usr/bin/env python3
"""Peak memory of the data pipeline as the corpus grows: the figures of docs/data.md.

Builds corpora of growing size from Multi30k (its training pairs repeated 1, 2, 4, 8 times, with
its own val and test_2016_flickr), runs scripts/prepare_multi30k.py on each in shortlist mode
--rounds times, and reports two peaks: the largest single process (what GNU `time -v` calls the
maximum resident set size) and the whole process tree (the script, its tokenization workers and
fairseq-preprocess), the sum of their proportional set sizes read from /proc every SAMPLE_S
seconds. Repeating the same pairs keeps the vocabulary fixed, so what grows is only the number of
lines streamed. Not part of the test suite: about 5 minutes on 2 cores.
"""

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20
SAMPLE_S = 0.1
OTHER_FILES = ("val.en.gz", "val.fr.gz", "test_2016_flickr.en.gz", "test_2016_flickr.fr.gz")


def build_corpus(source: Path, folder: Path, repeats: int) -> int:
    """Multi30k with its training pairs repeated; returns the number of training pairs."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in OTHER_FILES:
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(source / name)
    for language in ("en", "fr"):
        lines = gzip.decompress((source / f"train.{language}.gz").read_bytes())
        with gzip.open(folder / f"train.{language}.gz", "wb", compresslevel=1) as out:
            for _ in range(repeats):
                out.write(lines)
    return lines.count(b"\n") * repeats


def parents_by_process() -> dict:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the command name, in parentheses, may hold spaces: the fields after it are safe
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
    return parents


def descendants_and_self(root: int) -> set:
    parents = parents_by_process()
    tree = {root}
    while True:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        if not found:
            return tree
        tree |= found


def proportional_bytes(pid: int) -> int:
    """The process's proportional set size: pages it shares with others (the workers are forks
    of the script) count as a share, so that the sum over the tree counts each page once."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass  # the process ended while we looked
    return 0


def tree_bytes(root: int) -> int:
    return sum(proportional_bytes(pid) for pid in descendants_and_self(root))


def run_with_peaks(command, log_path):
    """Run command; its wall time, the peak resident memory of its largest process and of its
    whole tree."""
    start = time.perf_counter()
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        tree_peak = [0]
        done = threading.Event()

        def sample():
            while not done.wait(SAMPLE_S):
                tree_peak[0] = max(tree_peak[0], tree_bytes(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        done.set()
        sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: {command[1]} failed; see {log_path}")
    return time.perf_counter() - start, usage.ru_maxrss * 1024, tree_peak[0]


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--from-dir",
        type=Path,
        default=REPO.parent / "shared" / "data" / "multi30k",
        help="the Multi30k files (train, val, test_2016_flickr .en.gz/.fr.gz)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/pipeline-memory"), help="corpora and outputs"
    )
    parser.add_argument("--repeats", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--workers", type=int, default=2)
    # the tree's peak depends on how fairseq-preprocess's processes overlap in time, which varies
    parser.add_argument("--rounds", type=int, default=3, help="runs of the pipeline on each corpus")
    arguments = parser.parse_args()
    missing = [
        name
        for name in ("train.en.gz", "train.fr.gz", *OTHER_FILES)
        if not (arguments.from_dir / name).is_file()
    ]
    if missing:
        parser.error(
            f"{arguments.from_dir} lacks {', '.join(missing)}; pass the Multi30k folder with "
            "--from-dir"
        )
    return arguments


def measure(corpus: Path, prepared: Path, workers: int):
    shutil.rmtree(prepared, ignore_errors=True)
    prepared.mkdir(parents=True)
    command = [
        sys.executable,
        "scripts/prepare_multi30k.py",
        "--from-dir",
        str(corpus),
        "--out",
        str(prepared),
        "--shortlist",
        "30000",
        "--workers",
        str(workers),
    ]
    return run_with_peaks(command, prepared / "prepare.log")


def main():
    arguments = parse_arguments()
    rows = [
        f"| training pairs | wall time (median of {arguments.rounds}) | largest process (highest) "
        "| whole process tree (lowest - highest) |",
        "|---|---|---|---|",
    ]
    for repeats in arguments.repeats:
        corpus = arguments.out / f"corpus-x{repeats}"
        pairs = build_corpus(arguments.from_dir, corpus, repeats)
        rounds = [
            measure(corpus, arguments.out / f"prepared-x{repeats}", arguments.workers)
            for _ in range(arguments.rounds)
        ]
        seconds, largest, tree = zip(*rounds)
        rows.append(
            f"| {pairs:,} | {statistics.median(seconds):.0f} s | {max(largest) / MIB:.0f} MiB "
            f"| {min(tree) / MIB:.0f} - {max(tree) / MIB:.0f} MiB |"
        )
        print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
