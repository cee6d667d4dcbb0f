#!/usr/bin/env python3
"""What fairseq-train's ``--data-buffer-size 0`` costs, the option the project's commands pass.

fairseq reads batches ahead in a daemon thread (``--data-buffer-size``, 10 by default); a run that
stops mid-epoch can exit while that thread is inside torch, and the process then aborts ("terminate
called without an active exception", exit code 134) after saving its checkpoints. With 0 there is
no such thread: the main thread reads each batch itself. This measures what that costs, two ways:

- the work that moves onto the main thread: the CPU time this thread takes to read and collate
  one training batch of 80 sentences as fairseq-train does (fairseq's epoch iterator, buffer 0),
  averaged over --batches batches, against the time of one update at the fastest rate below (CPU
  time, so that other work on the machine does not inflate it);
- end to end: the benchmark's training (bench/benchmark.py: rnnsearch on Multi30k with BPE),
  --updates updates after --warmup, alternating buffer 10 and 0 --repeats times; target words
  per second from fairseq's own train_inner log (wall-clock: noisy on a shared machine).

Prints both, with every run. About 5 minutes on 2 cores.

    python -m bench.data_buffer [--work-dir /tmp/bahdanau-bench]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from fairseq.tasks.translation import TranslationConfig, TranslationTask

from bench import benchmark, machine

BUFFER_SIZES = (10, 0)  # fairseq's default, then the project's


def batch_reading(data_bin, batch_size, batches):
    """(CPU seconds, target tokens) of one training batch read and collated in this thread, as
    fairseq-train's epoch iterator does with --data-buffer-size 0: means over batches."""
    # fairseq-train's values of the options the task reads from its dataset configuration
    config = TranslationConfig(data=str(data_bin), dataset_impl="mmap", required_seq_len_multiple=1)
    task = TranslationTask.setup_task(config)
    task.load_dataset("train")
    epoch = task.get_batch_iterator(
        task.dataset("train"), max_sentences=batch_size, required_batch_size_multiple=8, seed=1
    ).next_epoch_itr(shuffle=True)
    seconds, tokens = [], []
    for _ in range(batches):
        start = time.thread_time()
        batch = next(epoch)
        seconds.append(time.thread_time() - start)
        tokens.append(batch["ntokens"])
    return statistics.mean(seconds), statistics.mean(tokens)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bahdanau-bench"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--updates", type=int, default=40)
    parser.add_argument("--size", type=int, default=256, help="every layer's (default: 256)")
    parser.add_argument("--batches", type=int, default=300, help="read to time reading one")
    arguments = parser.parse_args()
    sizes = argparse.Namespace(
        **vars(arguments),
        embed=arguments.size,
        hidden=arguments.size,
        maxout=arguments.size,
        batch_size=80,
        log_interval=10,
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    data_bin = benchmark.prepare_data(sizes.work_dir, env)
    print(f"Machine: {machine.machine_line(machine.describe())}", flush=True)
    runs = {size: [] for size in BUFFER_SIZES}
    for repeat in range(sizes.repeats):
        for size in BUFFER_SIZES:
            save_dir = sizes.work_dir / "data-buffer"
            option = ("--data-buffer-size", size)
            words, _, _ = benchmark.train("rnnsearch", data_bin, save_dir, sizes, env, *option)
            runs[size].append(words)
            print(f"repeat {repeat + 1}, --data-buffer-size {size}: {words:,.0f} words/s")
    default, ours = (statistics.median(runs[size]) for size in BUFFER_SIZES)
    print(
        f"median target words/s: buffer {BUFFER_SIZES[0]} {default:,.0f}, "
        f"buffer 0 {ours:,.0f} ({ours / default - 1:+.1%})"
    )
    reading, tokens = batch_reading(data_bin, sizes.batch_size, sizes.batches)
    update = tokens / max(max(sizes_runs) for sizes_runs in runs.values())
    print(
        f"reading and collating a batch in the main thread: {reading * 1000:.2f} ms of CPU "
        f"(mean of {sizes.batches}); an update at the fastest rate above: {update * 1000:.0f} ms; "
        f"so at most {reading / update:.2%} of the training time"
    )


if __name__ == "__main__":
    main()
