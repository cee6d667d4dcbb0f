"""What the measurements share: the Multi30k data they run on, the models at matched sizes (as
fairseq-train flags, and built in Python), fairseq-train's timed runs and fairseq-generate's
decoding, and the FLOP count of rnnsearch's training."""

import os
import re
import shutil
import subprocess
import sys
import time
from argparse import Namespace

from fairseq.data import data_utils
from fairseq.models.lstm import LSTMModel, base_architecture

from bench import models
from bench.paths import MULTI30K, PLUGIN


def prepare_multi30k(work_dir, env):
    """Multi30k En->Fr with joint BPE (10,000 merges, pairs of at most 50 words), from
    ../shared/data/multi30k, once per work folder: its data-bin."""
    out = work_dir / "multi30k-bpe"
    if not (out / "data-bin" / "test.en-fr.en.bin").exists():
        subprocess.run(
            [
                shutil.which("bahdanau-prepare-data", path=env["PATH"]),
                "multi30k",
                "--from-dir",
                MULTI30K,
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


def average_lengths(data_bin, split="train"):
    lengths = []
    for language in ("en", "fr"):
        dataset = data_utils.load_indexed_dataset(str(data_bin / f"{split}.en-fr.{language}"))
        lengths.append(float(dataset.sizes.mean()))
    return lengths


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


def timed_training_flags(batching, updates, log_interval, save_dir):
    """fairseq-train's options for a run timed from its own log: batches as ``batching`` says
    (["--batch-size", 80], say), Adam, no dropout, no validation, a train_inner line every
    ``log_interval`` updates, one checkpoint at the end."""
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
        *batching,
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


def compilations(log):
    """What the fast path compiled and recorded in a run, as it logged each compilation
    (speed/compiling.py: ``compiled ... in S s``) and, on a GPU, each bucket's CUDA graphs
    (speed/capture.py: ``recorded ... in S s``), in fairseq-train's log format
    (``... | bahdanau_plugin.speed.compiling | ...``) or fairseq-generate's (``INFO:...:...``)."""
    return re.findall(r"speed\.(?:compiling|capture)(?: \| |:)((?:compiled|recorded) .*)", log)


def fast_path_warnings(log):
    """Where the fast path stepped aside in a run (speed/: a method run eagerly, a loop run
    without graphs), as it warned, in fairseq-train's log format or fairseq-generate's: a speed
    measured then is not the fast path's."""
    return re.findall(r"WARNING(?: \| |:)bahdanau_plugin\.speed\.\w+(?: \| |:)(.*)", log)


def compiling_seconds(compiled) -> float:
    """The seconds that ``compilations``' lines took in all. A compilation logged just before a
    recording took place within it (a bucket's first pass compiles the step): counted once."""
    seconds = [float(re.search(r" in ([\d.]+) s$", line).group(1)) for line in compiled]
    within = [
        a.startswith("compiled") and b.startswith("recorded")
        for a, b in zip(compiled, compiled[1:])
    ]
    return sum(s for s, inside in zip(seconds, within + [False]) if not inside)


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
            ["--batch-size", sizes.batch_size],
            sizes.warmup + sizes.updates,
            sizes.log_interval,
            save_dir,
        ),
        *more_options,
    ]
    log, _, peak = run_measured(command, env)
    return training_words_per_second(log, sizes.warmup), peak, compilations(log)


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


def dictionary(size):
    """A synthetic dictionary of ``size`` symbols, fairseq's special ones included."""
    return models.dictionary(size - 4)


def build(name, sizes, task):
    """rnnsearch, rnnencdec or fairseq's lstm at the benchmark's matched sizes."""
    if name in models.MODELS:
        return models.build_model(
            name,
            task,
            encoder_embed_dim=sizes.embed,
            decoder_embed_dim=sizes.embed,
            encoder_hidden_dim=sizes.hidden,
            decoder_hidden_dim=sizes.hidden,
            attention_dim=sizes.hidden,
            maxout_dim=sizes.maxout,
        )
    args = Namespace(
        encoder_embed_dim=sizes.embed,
        decoder_embed_dim=sizes.embed,
        encoder_hidden_size=sizes.hidden,
        decoder_hidden_size=sizes.hidden,
        encoder_bidirectional=True,
        decoder_out_embed_dim=sizes.maxout,
        dropout=0.0,
        max_source_positions=1024,
        max_target_positions=1024,
        criterion="cross_entropy",
    )
    base_architecture(args)
    return LSTMModel.build_model(args, task)
