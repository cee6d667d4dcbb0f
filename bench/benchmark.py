#!/usr/bin/env python3
"""rnnsearch against fairseq's own attention LSTM, on Multi30k En->Fr with BPE, in one run.

For each repeat, alternating the two models: fairseq-train for a fixed number of updates (target
words per second after a warm-up, from fairseq's own train_inner log), then fairseq-generate
--beam 5 on test_2016_flickr (sentences per second), each process's peak resident memory, and the
machine's measured float32 matrix-multiply peak. Prints a table and rewrites the measured block of
docs/performance.md. Not part of the test suite: it takes about 15 minutes on 2 cores.
"""

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from bahdanau_plugin.cpu_fast_path.onednn_linear import linear

REPO = Path(__file__).resolve().parents[1]
PLUGIN = str(REPO / "bahdanau_plugin")
MARKERS = ("<!-- benchmark:start -->", "<!-- benchmark:end -->")


def model_flags(name, sizes):
    """Matched sizes: embeddings, encoder hidden (per direction), decoder hidden, output layer."""
    if name == "rnnsearch":
        return ["--arch", "rnnsearch",
                "--encoder-embed-dim", sizes.embed, "--decoder-embed-dim", sizes.embed,
                "--encoder-hidden-dim", sizes.hidden, "--decoder-hidden-dim", sizes.hidden,
                "--attention-dim", sizes.hidden, "--maxout-dim", sizes.maxout]
    return ["--arch", "lstm", "--encoder-bidirectional",
            "--encoder-embed-dim", sizes.embed, "--decoder-embed-dim", sizes.embed,
            "--encoder-hidden-size", sizes.hidden, "--decoder-hidden-size", sizes.hidden,
            "--decoder-out-embed-dim", sizes.maxout]


def run_measured(command, env):
    """Run a command; its output, wall time and peak resident memory in MiB."""
    start = time.perf_counter()
    process = subprocess.Popen([str(part) for part in command], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"error: {command[0]} failed ({process.returncode}):\n{output[-3000:]}")
    return output, time.perf_counter() - start, usage.ru_maxrss / 1024


def training_words_per_second(log, warmup):
    """Target words over time for the logged intervals after the warm-up updates."""
    words = seconds = 0.0
    previous = 0
    for match in re.finditer(r"train_inner .*?wpb=([\d.]+), .*?num_updates=(\d+)", log):
        line = log[match.start(): log.index("\n", match.start())]
        ups = float(re.search(r"ups=([\d.]+)", line).group(1))
        wpb, updates = float(match.group(1)), int(match.group(2))
        if previous >= warmup:
            words += wpb * (updates - previous)
            seconds += (updates - previous) / ups
        previous = updates
    return words / seconds


def train(name, data_bin, save_dir, sizes, env):
    shutil.rmtree(save_dir, ignore_errors=True)
    command = [shutil.which("fairseq-train", path=env["PATH"]), data_bin, *model_flags(name, sizes),
               "--user-dir", PLUGIN,
               "--cpu", "--seed", "1", "--dropout", "0", "--optimizer", "adam", "--lr", "0.002",
               "--clip-norm", "1.0", "--batch-size", sizes.batch_size,
               "--max-update", sizes.warmup + sizes.updates, "--log-interval", sizes.log_interval,
               "--log-format", "simple", "--disable-validation", "--no-epoch-checkpoints",
               "--save-dir", save_dir]
    log, _, peak = run_measured(command, env)
    return training_words_per_second(log, sizes.warmup), peak


def decode(name, data_bin, save_dir, sizes, env):
    command = [shutil.which("fairseq-generate", path=env["PATH"]), data_bin, "--cpu",
               "--path", save_dir / "checkpoint_last.pt", "--beam", "5", "--batch-size", "50",
               "--max-len-a", "1.5", "--max-len-b", "5", "--quiet",
               # Both load through the plugin: fairseq's own lstm checkpoints need its safe loading
               # (they hold an argparse.Namespace) under torch >= 2.6.
               "--user-dir", PLUGIN]
    log, _, peak = run_measured(command, env)
    found = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s", log)
    sentences, tokens, seconds = (float(group.replace(",", "")) for group in found.groups())
    return sentences / seconds, tokens / sentences, peak


def matmul_peak_flops(size=2048, repeats=10):
    """Best float32 GEMM rate of this machine with torch's current thread count, through either of
    torch's CPU kernels: torch.mm (MKL) and the oneDNN product that the plugin's layers use."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    best = float("inf")
    for product in (torch.mm, linear):
        product(a, b)
        for _ in range(repeats):
            start = time.perf_counter()
            product(a, b)
            best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def rnnsearch_training_flops_per_target_word(sizes, source_words, target_words):
    """Multiply-adds x 2 of one training step per target token: backward = 2 x forward."""
    embed, hidden, attention, maxout, vocab = (sizes.embed, sizes.hidden, sizes.hidden,
                                               sizes.maxout, sizes.vocab)
    annotation = 2 * hidden
    ratio = source_words / target_words  # source tokens per target token
    encoder = ratio * 2 * 2 * (3 * hidden * embed + 3 * hidden * hidden)
    projected_annotations = ratio * 2 * attention * annotation
    attention_step = 2 * attention * hidden + source_words * (2 * attention + 2 * annotation)
    gru = 2 * (3 * hidden * embed + 3 * hidden * annotation + 3 * hidden * hidden)
    deep_output = 2 * (2 * maxout) * (hidden + embed + annotation) + 2 * vocab * maxout
    forward = encoder + projected_annotations + attention_step + gru + deep_output
    return 3 * forward


def average_lengths(data_bin, split="train"):
    from fairseq.data import data_utils

    lengths = []
    for language in ("en", "fr"):
        dataset = data_utils.load_indexed_dataset(str(data_bin / f"{split}.en-fr.{language}"))
        lengths.append(float(dataset.sizes.mean()))
    return lengths


def prepare_data(work_dir, env):
    out = work_dir / "multi30k-bpe"
    if not (out / "data-bin" / "test.en-fr.en.bin").exists():
        subprocess.run([sys.executable, REPO / "scripts" / "prepare_multi30k.py", "--from-dir",
                        REPO.parent / "shared" / "data" / "multi30k", "--out", out, "--bpe", "10000",
                        "--max-len", "50"], check=True, env=env)
    return out / "data-bin"


def report(sizes, results, peak, flops_per_word, command):
    def median(name, key):
        return statistics.median(result[key] for result in results[name])

    rows = [
        ("training target words/s", "train_wps", "{:,.0f}"),
        ("decoding sentences/s (beam 5)", "decode_sps", "{:.1f}"),
        ("peak memory, training (MiB)", "train_mem", "{:,.0f}"),
        ("peak memory, decoding (MiB)", "decode_mem", "{:,.0f}"),
        ("tokens per decoded sentence", "decode_len", "{:.1f}"),
    ]
    lines = ["| measure (median of %d) | rnnsearch | lstm | rnnsearch / lstm |" % sizes.repeats,
             "|---|---|---|---|"]
    for label, key, form in rows:
        ours, theirs = median("rnnsearch", key), median("lstm", key)
        lines.append(f"| {label} | {form.format(ours)} | {form.format(theirs)} | {ours / theirs:.2f} |")
    achieved = flops_per_word * median("rnnsearch", "train_wps")
    lines += [
        "",
        f"- Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads.",
        f"- Measured float32 matrix-multiply peak: {peak / 1e9:.1f} GFLOP/s "
        "(2048 x 2048, the faster of torch.mm and oneDNN).",
        f"- rnnsearch training: {flops_per_word / 1e6:.2f} MFLOP per target word (formula above), "
        f"so {achieved / 1e9:.2f} GFLOP/s = {100 * achieved / peak:.1f}% of the peak.",
        f"- Sizes: embeddings {sizes.embed}, hidden {sizes.hidden} (per encoder direction), "
        f"alignment {sizes.hidden}, output layer {sizes.maxout}, vocabulary {sizes.vocab}, "
        f"batches of {sizes.batch_size} sentences; {sizes.updates} timed updates after "
        f"{sizes.warmup} warm-up updates.",
        f"- Every run: " + ", ".join(
            f"{name} " + "/".join(f"{r['train_wps']:,.0f}" for r in results[name]) + " words/s"
            for name in results),
        f"- Command: `{command}`",
    ]
    return "\n".join(lines)


def write_into(document, block):
    text = document.read_text(encoding="utf-8")
    start, end = text.index(MARKERS[0]) + len(MARKERS[0]), text.index(MARKERS[1])
    document.write_text(text[:start] + "\n" + block + "\n" + text[end:], encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bahdanau-bench"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--updates", type=int, default=80)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=80)
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--maxout", type=int, default=256)
    parser.add_argument("--document", type=Path, default=REPO / "docs" / "performance.md")
    sizes = parser.parse_args()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    data_bin = prepare_data(sizes.work_dir, env)
    sizes.vocab = sum(1 for _ in open(data_bin / "dict.fr.txt", encoding="utf-8")) + 4
    peak = matmul_peak_flops()
    results = {"rnnsearch": [], "lstm": []}
    for repeat in range(sizes.repeats):
        for name in results:
            save_dir = sizes.work_dir / f"checkpoints-{name}"
            train_wps, train_mem = train(name, data_bin, save_dir, sizes, env)
            decode_sps, decode_len, decode_mem = decode(name, data_bin, save_dir, sizes, env)
            results[name].append(dict(train_wps=train_wps, train_mem=train_mem, decode_sps=decode_sps,
                                      decode_len=decode_len, decode_mem=decode_mem))
            print(f"repeat {repeat + 1} {name}: {results[name][-1]}", flush=True)
    source_words, target_words = average_lengths(data_bin)
    flops = rnnsearch_training_flops_per_target_word(sizes, source_words, target_words)
    command = "python bench/benchmark.py " + " ".join(sys.argv[1:])
    block = report(sizes, results, peak, flops, command.strip())
    print(block)
    write_into(sizes.document, block)


if __name__ == "__main__":
    main()
