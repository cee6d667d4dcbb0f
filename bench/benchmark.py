#!/usr/bin/env python3
"""rnnsearch against fairseq's own attention LSTM and against itself in plain PyTorch, on Multi30k
En->Fr with BPE, on each CPU class.

For each CPU class (``--cpu-classes``: the machine as it is, and the same machine capped at AVX2
by oneDNN's, MKL's and ATen's own switches, see bench/machine.py) and each repeat, alternating the
three systems (rnnsearch as it runs by default, rnnsearch with the CPU fast path off,
``BAHDANAU_CPU_FAST_PATH=plain``, and lstm): fairseq-train for a fixed number of updates (target
words per second after a warm-up, from fairseq's own train_inner log), then fairseq-generate at
beam 5 and beam 12 on test_2016_flickr with every hypothesis forced to the same length (generated
tokens per second), and each process's peak resident memory. Then bench/profile_step.py splits a
training step and a beam-search step of rnnsearch and lstm into matrix products and everything
else. Prints one table per class and writes it into its own block of docs/performance.md
(``--document``; created if missing), with the machine's load average before and after. Not part
of the test suite: about 10 minutes per class on 2 cores.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from bahdanau_plugin.cpu_fast_path.freed_memory import REUSE_BYTES
from bench import machine

REPO = Path(__file__).resolve().parents[1]
PLUGIN = str(REPO / "bahdanau_plugin")
CPU_CLASSES = {"native": {}, "avx2": machine.AVX2_SWITCHES}
BEAMS = (5, 12)
# The systems, in the order each repeat runs them: (architecture, environment).
SYSTEMS = {
    "rnnsearch": ("rnnsearch", {"BAHDANAU_CPU_FAST_PATH": "auto"}),
    "plain": ("rnnsearch", {"BAHDANAU_CPU_FAST_PATH": "plain"}),
    "lstm": ("lstm", {}),
}
# lstm trains with, set by glibc's own variables, the malloc thresholds that rnnsearch's first
# training step sets (cpu_fast_path/freed_memory.py), so that the ratio compares the models, not
# the allocator's settings; both decode with glibc's defaults, and plain keeps them throughout.
TRAINING_ENVIRONMENT = {
    "lstm": {
        "MALLOC_MMAP_THRESHOLD_": str(REUSE_BYTES),
        "MALLOC_TRIM_THRESHOLD_": str(REUSE_BYTES),
    }
}


def model_flags(name, sizes):
    """Matched sizes: embeddings, encoder hidden (per direction), decoder hidden, output layer."""
    if name == "rnnsearch":
        return [
            "--arch",
            "rnnsearch",
            "--encoder-embed-dim",
            sizes.embed,
            "--decoder-embed-dim",
            sizes.embed,
            "--encoder-hidden-dim",
            sizes.hidden,
            "--decoder-hidden-dim",
            sizes.hidden,
            "--attention-dim",
            sizes.hidden,
            "--maxout-dim",
            sizes.maxout,
        ]
    return [
        "--arch",
        "lstm",
        "--encoder-bidirectional",
        "--encoder-embed-dim",
        sizes.embed,
        "--decoder-embed-dim",
        sizes.embed,
        "--encoder-hidden-size",
        sizes.hidden,
        "--decoder-hidden-size",
        sizes.hidden,
        "--decoder-out-embed-dim",
        sizes.maxout,
    ]


def run_measured(command, env):
    """Run a command; its output, wall time and peak resident memory in MiB."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(part) for part in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
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
        line = log[match.start() : log.index("\n", match.start())]
        ups = float(re.search(r"ups=([\d.]+)", line).group(1))
        wpb, updates = float(match.group(1)), int(match.group(2))
        if previous >= warmup:
            words += wpb * (updates - previous)
            seconds += (updates - previous) / ups
        previous = updates
    return words / seconds


def fast_path_choices(log):
    """The fast path's choices as a run logged them (cpu_fast_path/measured_choice.py), in
    fairseq-train's log format (``... | measured_choice | ...``) or fairseq-generate's
    (``INFO:...measured_choice:...``)."""
    return re.findall(r"measured_choice(?: \| |:)(.*)", log)


def measuring_budget_used(choices):
    """The most the fast path's measurements took in a run, in ms (each choice's line says)."""
    used = [re.search(r"\((\d+) of the \d+ ms measuring budget used\)", line) for line in choices]
    return max((int(found.group(1)) for found in used if found), default=0)


def timed_training_flags(batch_size, updates, log_interval, save_dir):
    """fairseq-train's options for a run timed from its own log: Adam, no dropout, no validation,
    a train_inner line every ``log_interval`` updates, one checkpoint at the end."""
    return [
        "--seed",
        "1",
        "--dropout",
        "0",
        "--optimizer",
        "adam",
        "--lr",
        "0.002",
        "--clip-norm",
        "1.0",
        "--batch-size",
        batch_size,
        "--max-update",
        updates,
        "--data-buffer-size",
        "0",
        "--log-interval",
        log_interval,
        "--log-format",
        "simple",
        "--disable-validation",
        "--no-epoch-checkpoints",
        "--save-dir",
        save_dir,
    ]


def train(name, data_bin, save_dir, sizes, env, *more_options):
    """Target words per second after the warm-up, and peak memory; more_options win."""
    shutil.rmtree(save_dir, ignore_errors=True)
    command = [
        shutil.which("fairseq-train", path=env["PATH"]),
        data_bin,
        *model_flags(name, sizes),
        "--user-dir",
        PLUGIN,
        "--cpu",
        *timed_training_flags(
            sizes.batch_size, sizes.warmup + sizes.updates, sizes.log_interval, save_dir
        ),
        *more_options,
    ]
    log, _, peak = run_measured(command, env)
    return training_words_per_second(log, sizes.warmup), peak, fast_path_choices(log)


def generation_arguments(data_bin, save_dir, beam, length):
    """fairseq-generate's arguments for the benchmark's decoding: the test set, batches of 50,
    every hypothesis forced to ``length`` tokens and EOS."""
    return [
        data_bin,
        "--cpu",
        "--path",
        save_dir / "checkpoint_last.pt",
        "--beam",
        beam,
        "--batch-size",
        "50",
        "--min-len",
        length,
        "--max-len-a",
        "0",
        "--max-len-b",
        length,
        "--quiet",
        # Both load through the plugin: fairseq's own lstm checkpoints need its safe loading
        # (they hold an argparse.Namespace) under torch >= 2.6.
        "--user-dir",
        PLUGIN,
    ]


def decode(name, data_bin, save_dir, beam, length, env):
    """Generated tokens per second with every hypothesis forced to ``length`` tokens and EOS, so
    that a model which stops early is not counted as faster."""
    command = [
        shutil.which("fairseq-generate", path=env["PATH"]),
        *generation_arguments(data_bin, save_dir, beam, length),
    ]
    log, _, peak = run_measured(command, env)
    found = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s", log)
    sentences, tokens, seconds = (float(group.replace(",", "")) for group in found.groups())
    if tokens != sentences * (length + 1):
        sys.exit(f"error: {name} decoded {tokens:.0f} tokens, not {length + 1} per sentence")
    return tokens / seconds, peak, fast_path_choices(log)


def rnnsearch_training_flops_per_target_word(sizes, source_words, target_words):
    """Multiply-adds x 2 of one training step per target token: backward = 2 x forward."""
    embed, hidden, attention, maxout, vocab = (
        sizes.embed,
        sizes.hidden,
        sizes.hidden,
        sizes.maxout,
        sizes.vocab,
    )
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
        subprocess.run(
            [
                sys.executable,
                REPO / "scripts" / "prepare_multi30k.py",
                "--from-dir",
                REPO.parent / "shared" / "data" / "multi30k",
                "--out",
                out,
                "--bpe",
                "10000",
                "--max-len",
                "50",
            ],
            check=True,
            env=env,
        )
    return out / "data-bin"


def measure_class(cpu_class, sizes, data_bin, env):
    """One machine class: its description, then, for each repeat, the three systems trained and
    decoded one after the other in that class's environment, then the split of their steps."""
    env = {**env, **CPU_CLASSES[cpu_class]}
    description = json.loads(
        subprocess.run(
            [sys.executable, "-m", "bench.machine"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    check_switches_took_effect(cpu_class, description)
    print(f"{cpu_class}: {machine.machine_line(description)}", flush=True)
    description["load_before"] = os.getloadavg()
    results = {name: [] for name in SYSTEMS}
    for repeat in range(sizes.repeats):
        for name, (arch, system_env) in SYSTEMS.items():
            system_env = {**env, **system_env}
            save_dir = sizes.work_dir / f"checkpoints-{name}"
            training_env = {**system_env, **TRAINING_ENVIRONMENT.get(name, {})}
            wps, memory, choices = train(arch, data_bin, save_dir, sizes, training_env)
            measured = {"train_wps": wps, "train_mem": memory, "train_choices": choices}
            budgets = [measuring_budget_used(choices)]
            for beam in BEAMS:
                tokens_per_second, peak, choices = decode(
                    arch, data_bin, save_dir, beam, sizes.decode_length, system_env
                )
                measured[f"decode_tps_{beam}"] = tokens_per_second
                measured["decode_mem"] = max(peak, measured.get("decode_mem", 0))
                measured.setdefault("decode_choices", choices)
                budgets.append(measuring_budget_used(choices))
            measured["budget_ms"] = max(budgets)
            results[name].append(measured)
            shown = {key: value for key, value in measured.items() if "choices" not in key}
            print(f"{cpu_class} repeat {repeat + 1} {name}: {shown}", flush=True)
    description["split"] = outside_products(sizes, {**env, **SYSTEMS["rnnsearch"][1]})
    description["load_after"] = os.getloadavg()
    return description, results


def outside_products(sizes, env):
    """bench/profile_step.py's split of a training step and a beam-search step of both models."""
    command = [
        sys.executable,
        REPO / "bench" / "profile_step.py",
        "--json",
        "--steps",
        "5",
        "--vocab",
        sizes.vocab,
        "--batch",
        sizes.batch_size,
        "--embed",
        sizes.embed,
        "--hidden",
        sizes.hidden,
        "--maxout",
        sizes.maxout,
        "--length",
        sizes.decode_length,
    ]
    output = subprocess.run(
        [str(part) for part in command], env=env, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def check_switches_took_effect(cpu_class, description):
    if cpu_class == "avx2" and (
        description["class"] != "AVX2" or description["aten_capability"] != "AVX2"
    ):
        sys.exit(
            f"error: the AVX2 switches did not take effect (oneDNN: {description['onednn_isa']}, "
            f"ATen: {description['aten_capability']}); check {', '.join(machine.AVX2_SWITCHES)}"
        )


def report(description, sizes, results, flops_per_word, command):
    def median(name, key):
        return statistics.median(result[key] for result in results[name])

    rows = [
        ("training target words/s", "train_wps", "{:,.0f}"),
        *(
            (f"decoding generated tokens/s, beam {beam}", f"decode_tps_{beam}", "{:,.0f}")
            for beam in BEAMS
        ),
        ("peak memory, training (MiB)", "train_mem", "{:,.0f}"),
        ("peak memory, decoding (MiB)", "decode_mem", "{:,.0f}"),
    ]
    lines = [
        f"{date.today().isoformat()}, {description['class']} class.",
        "",
        f"| measure (median of {sizes.repeats}) | rnnsearch | rnnsearch, plain PyTorch | lstm "
        "| rnnsearch / lstm | rnnsearch / plain |",
        "|---|---|---|---|---|---|",
    ]
    for label, key, form in rows:
        ours, plain, theirs = (median(name, key) for name in SYSTEMS)
        lines.append(
            f"| {label} | {form.format(ours)} | {form.format(plain)} | {form.format(theirs)} "
            f"| {ours / theirs:.2f} | {ours / plain:.2f} |"
        )
    peak = 1e9 * max(description["matmul_peak_gflops"].values())
    achieved = flops_per_word * median("rnnsearch", "train_wps")
    split = description["split"]
    lines += [
        "",
        "| self CPU ms (bench/profile_step.py) | rnnsearch: products | everything else "
        "| lstm: products | everything else |",
        "|---|---|---|---|---|",
        *(
            f"| {phase} | {split['rnnsearch'][phase]['products_ms']:.1f} "
            f"| {split['rnnsearch'][phase]['rest_ms']:.1f} "
            f"| {split['lstm'][phase]['products_ms']:.1f} | {split['lstm'][phase]['rest_ms']:.1f} |"
            for phase in ("training step", "beam-search step")
        ),
        "",
        f"- Machine: {machine.machine_line(description)}.",
        "- Load average (1, 5, 15 min) before and after: "
        + " and ".join(
            "/".join(f"{value:.1f}" for value in description[key])
            for key in ("load_before", "load_after")
        )
        + ".",
        f"- rnnsearch training: {flops_per_word / 1e6:.2f} MFLOP per target word (formula above), "
        f"so {achieved / 1e9:.2f} GFLOP/s = {100 * achieved / peak:.1f}% of the faster peak.",
        "- The fast path's measurements (cpu_fast_path/measured_choice.py) took at most "
        f"{max(r['budget_ms'] for r in results['rnnsearch'])} ms in a run.",
        f"- Sizes: embeddings {sizes.embed}, hidden {sizes.hidden} (per encoder direction), "
        f"alignment {sizes.hidden}, output layer {sizes.maxout}, vocabulary {sizes.vocab}, "
        f"batches of {sizes.batch_size} sentences; {sizes.updates} timed updates after "
        f"{sizes.warmup} warm-up updates. Decoding: test_2016_flickr, batches of 50 sentences, "
        f"every hypothesis forced to {sizes.decode_length} tokens and EOS. A beam-search step "
        "above: one target position of 50 sentences at beam 5.",
        "- The fast path's choices in rnnsearch's first training run and first decoding run "
        "(beam 5), as logged:",
        "",
        "  ```",
        *(
            f"  {line}"
            for key in ("train_choices", "decode_choices")
            for line in results["rnnsearch"][0][key]
        ),
        "  ```",
        "",
        "- Every run, training words/s: "
        + ", ".join(
            f"{name} " + "/".join(f"{r['train_wps']:,.0f}" for r in results[name])
            for name in results
        ),
        f"- Command: `{command}`",
    ]
    return "\n".join(lines)


def markers(cpu_class):
    return f"<!-- benchmark:{cpu_class}:start -->", f"<!-- benchmark:{cpu_class}:end -->"


def write_into(document, cpu_class, block):
    """Replace the class's measured block in the document, or add it (and the document) if
    missing."""
    start_marker, end_marker = markers(cpu_class)
    text = document.read_text(encoding="utf-8") if document.exists() else ""
    if start_marker in text and end_marker in text:
        start, end = text.index(start_marker) + len(start_marker), text.index(end_marker)
        text = text[:start] + "\n" + block + "\n" + text[end:]
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "# Benchmark\n\n") + (
            f"### {cpu_class}\n\n{start_marker}\n{block}\n{end_marker}\n"
        )
    document.write_text(text, encoding="utf-8")


def check_writable(document):
    """Fail before the measurements, not after them: the document's folder exists and takes a
    file."""
    document.parent.mkdir(parents=True, exist_ok=True)
    with open(document, "a", encoding="utf-8"):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bahdanau-bench"))
    parser.add_argument(
        "--cpu-classes",
        nargs="+",
        choices=sorted(CPU_CLASSES),
        default=["native", "avx2"],
        help="native: the CPU as it is; avx2: oneDNN, MKL and ATen capped at AVX2",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--updates", type=int, default=80)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=80)
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--maxout", type=int, default=256)
    parser.add_argument(
        "--decode-length",
        type=int,
        default=None,
        help="tokens every hypothesis is forced to (default: the test set's mean reference length)",
    )
    parser.add_argument("--document", type=Path, default=REPO / "docs" / "performance.md")
    sizes = parser.parse_args()
    check_writable(sizes.document)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    data_bin = prepare_data(sizes.work_dir, env)
    sizes.vocab = sum(1 for _ in open(data_bin / "dict.fr.txt", encoding="utf-8")) + 4
    sizes.decode_length = sizes.decode_length or round(average_lengths(data_bin, "test")[1])
    flops = rnnsearch_training_flops_per_target_word(sizes, *average_lengths(data_bin))
    command = ("python -m bench.benchmark " + " ".join(sys.argv[1:])).strip()
    for cpu_class in sizes.cpu_classes:
        description, results = measure_class(cpu_class, sizes, data_bin, env)
        block = report(description, sizes, results, flops, command)
        print(block, flush=True)
        write_into(sizes.document, description["class"], block)


if __name__ == "__main__":
    main()
