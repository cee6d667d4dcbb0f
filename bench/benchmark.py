#!/usr/bin/env python3
"""rnnsearch against fairseq's own attention LSTM and against itself in plain PyTorch, on Multi30k
En->Fr with BPE, on each CPU class.

For each CPU class (``--cpu-classes``: the machine as it is, and the same machine capped at AVX2
by oneDNN's, MKL's and ATen's own switches, see bench/machine.py) and each repeat, alternating the
three systems (rnnsearch as it runs by default, its decoder's step compiled; rnnsearch run
eagerly, ``BAHDANAU_FAST_PATH=plain``; and lstm): fairseq-train for a fixed number of updates
(target words per second after a warm-up, which holds the compiling, from fairseq's own
train_inner log), then fairseq-generate at beam 5 and beam 12 on test_2016_flickr with every
hypothesis forced to the same length (generated tokens per second, compiling included, as a user
waits for it), each process's peak resident memory, and what each run compiled and how long that
took. Then bench/profile_step.py splits a
training step and a beam-search step of rnnsearch and lstm into matrix products and everything
else. Prints one table per class and writes it into its own block of docs/performance.md
(``--document``; created if missing), with the machine's load average before and after. Not part
of the test suite (how long it takes: bench/README.md).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

from bahdanau_plugin.freed_memory import REUSE_BYTES
from bench import machine
from bench.common import (
    average_lengths,
    compilations,
    compiling_seconds,
    generation_arguments,
    prepare_multi30k,
    rnnsearch_training_flops_per_target_word,
    run_measured,
    train,
)
from bench.paths import REPO

CPU_CLASSES = {"native": {}, "avx2": machine.AVX2_SWITCHES}
BEAMS = (5, 12)
# The systems, in the order each repeat runs them: (architecture, environment).
SYSTEMS = {
    "rnnsearch": ("rnnsearch", {"BAHDANAU_FAST_PATH": "auto"}),
    "plain": ("rnnsearch", {"BAHDANAU_FAST_PATH": "plain"}),
    "lstm": ("lstm", {}),
}
# lstm trains with, set by glibc's own variables, the malloc thresholds that fairseq-train sets
# with the plugin (bahdanau_plugin/freed_memory.py), so that the ratio compares the models, not the
# allocator's settings; both decode with glibc's defaults, and plain keeps them throughout.
TRAINING_ENVIRONMENT = {
    "lstm": {
        "MALLOC_MMAP_THRESHOLD_": str(REUSE_BYTES),
        "MALLOC_TRIM_THRESHOLD_": str(REUSE_BYTES),
    }
}


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
    return tokens / seconds, peak, compilations(log)


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
            wps, memory, compiled = train(arch, data_bin, save_dir, sizes, training_env)
            measured = {"train_wps": wps, "train_mem": memory, "train_compiled": compiled}
            for beam in BEAMS:
                tokens_per_second, peak, compiled = decode(
                    arch, data_bin, save_dir, beam, sizes.decode_length, system_env
                )
                measured[f"decode_tps_{beam}"] = tokens_per_second
                measured["decode_mem"] = max(peak, measured.get("decode_mem", 0))
                measured[f"decode_compiled_{beam}"] = compiled
            results[name].append(measured)
            shown = {key: value for key, value in measured.items() if "compiled" not in key}
            print(f"{cpu_class} repeat {repeat + 1} {name}: {shown}", flush=True)
    description["split"] = outside_products(sizes, {**env, **SYSTEMS["rnnsearch"][1]})
    description["load_after"] = os.getloadavg()
    return description, results


def outside_products(sizes, env):
    """bench/profile_step.py's split of a training step and a beam-search step of both models."""
    command = [
        sys.executable,
        "-m",
        "bench.profile_step",
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
        [str(part) for part in command],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
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
        f"- Sizes: embeddings {sizes.embed}, hidden {sizes.hidden} (per encoder direction), "
        f"alignment {sizes.hidden}, output layer {sizes.maxout}, vocabulary {sizes.vocab}, "
        f"batches of {sizes.batch_size} sentences; {sizes.updates} timed updates after "
        f"{sizes.warmup} warm-up updates. Decoding: test_2016_flickr, batches of 50 sentences, "
        f"every hypothesis forced to {sizes.decode_length} tokens and EOS. A beam-search step "
        "above: one target position of 50 sentences at beam 5.",
        "- What rnnsearch compiled in each run (speed/compiling.py), seconds in all, training and "
        f"beams {' and '.join(map(str, BEAMS))}: "
        + ", ".join(
            "/".join(
                f"{compiling_seconds(r[key]):.1f}"
                for key in ("train_compiled", *(f"decode_compiled_{beam}" for beam in BEAMS))
            )
            for r in results["rnnsearch"]
        )
        + "; the first training run's and first decoding run's lines, as logged:",
        "",
        "  ```",
        *(
            f"  {line}"
            for key in ("train_compiled", f"decode_compiled_{BEAMS[0]}")
            for line in results["rnnsearch"][0][key]
        ),
        "  ```",
        "",
        *(
            f"- Every run, {label}: "
            + ", ".join(
                f"{name} " + "/".join(form.format(r[key]) for r in results[name])
                for name in results
            )
            + "; the slowest run over its system's median: "
            + ", ".join(
                f"{name} {min(r[key] for r in results[name]) / median(name, key):.2f}"
                for name in results
            )
            for label, key, form in rows[: 1 + len(BEAMS)]
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
    data_bin = prepare_multi30k(sizes.work_dir, env)
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
