"""Section: rnnsearch_50 against fairseq's lstm at the paper's sizes, on the GPU.

Both at matched sizes (bench/common.py's ``model_flags``: embeddings 620, encoder GRU/LSTM 1000
per direction, decoder 1000, alignment 1000, an output layer of 500 before the softmax) on a
synthetic corpus of the paper's shape (vocabulary 30,000, sentences of 10 to 50 words), in each
precision of PRECISIONS: float32 with TF32 off, float32 with TF32 on (matrix products and cuDNN's
RNNs: kit.py's TF32) and bfloat16 (--bf16). For each:
- training at the paper's batches of 80 sentences and at a GPU-sized batch (--max-tokens 8000):
  target words per second after a warm-up, from fairseq's own log, and the peak GPU memory;
- decoding at batches of 80: beam 12 with every hypothesis forced to the same length (so that
  the cost does not depend on the weights, and the models decode at their initialization),
  generated tokens per second and the peak GPU memory (fairseq's SequenceGenerator);
- rnnsearch's training FLOPs per target word (bench/common.py's formula) over the GPU's measured
  matrix-multiply peak in that precision.
A precision's TF32 setting is fixed when CUDA starts, so each precision runs in a process of its
own, ``python -m bench.gpu.paper_size PRECISION DATA_BIN WORK``, which runs fairseq-train's main
for every run in turn (bench/gpu/train.py: one start-up per precision, not one per run), the
models alternating.
"""

import argparse
import random
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from fairseq import tasks
from fairseq.sequence_generator import SequenceGenerator

from ..common import (
    average_lengths,
    compilations,
    compiling_seconds,
    fast_path_warnings,
    model_flags,
    rnnsearch_training_flops_per_target_word,
    timed_training_flags,
    training_words_per_second,
)
from ..paths import PLUGIN
from . import train
from .kit import Kit, print_result, result_of

MODELS = ("rnnsearch", "lstm")
# a precision's TF32 setting (kit.py's TF32), fairseq-train's options and the decoding dtype
PRECISIONS = {
    "float32, TF32 off": ("off", [], torch.float32),
    "float32, TF32 on": ("on", [], torch.float32),
    "bfloat16": ("cuDNN only", ["--bf16"], torch.bfloat16),
}
BEAM = 12
# sizes (bench/common.py's names), corpus (pairs of `lengths` words), batches (`batch` sentences,
# or `tokens`), and updates: the warm-up covers an epoch of either batching, so that every batch
# shape is met before the timed updates (rnnsearch records its recurrence's CUDA graphs at the
# first batch of each bucket of shapes, once per training run, after its step is compiled:
# speed/capture.py, speed/compiling.py)
PAPER = dict(embed=620, hidden=1000, maxout=500, vocab=30000, pairs=2000, lengths=(10, 50),
             batch=80, tokens=8000, warmup=25, updates=20, log_interval=5, decode_length=30,
             test=400)  # fmt: skip
DRY_RUN = {**PAPER, "embed": 8, "hidden": 8, "maxout": 4, "vocab": 200, "pairs": 200,
           "lengths": (3, 8), "batch": 8, "tokens": 60, "warmup": 1, "updates": 2,
           "log_interval": 1, "decode_length": 5, "test": 24}  # fmt: skip


def _sizes(dry_run: bool) -> SimpleNamespace:
    return SimpleNamespace(**(DRY_RUN if dry_run else PAPER))


def _device(dry_run: bool) -> str:
    return "cpu" if dry_run else "cuda"


def _batchings(sizes) -> dict:
    return {
        f"{sizes.batch} sentences": ["--batch-size", sizes.batch],
        f"{sizes.tokens:,} tokens": ["--max-tokens", sizes.tokens],
    }


def _corpus(kit: Kit, sizes) -> Path:
    """Random sentences over a vocabulary of sizes.vocab words, binarized."""
    root = kit.work / "paper-size"
    rng = random.Random(1)
    words = [f"w{index}" for index in range(sizes.vocab)]
    (root / "raw").mkdir(parents=True, exist_ok=True)
    for split, pairs in (("train", sizes.pairs), ("valid", sizes.batch), ("test", sizes.test)):
        for language in ("en", "fr"):
            lines = (
                " ".join(rng.choices(words, k=rng.randint(*sizes.lengths))) for _ in range(pairs)
            )
            (root / "raw" / f"{split}.{language}").write_text("\n".join(lines) + "\n")
    kit.binarize(root, "--nwordssrc", sizes.vocab, "--nwordstgt", sizes.vocab, "--workers", 8)
    return root / "data-bin"


def _configuration(name: str, precision: str, batching: list, data_bin, save_dir, dry_run):
    """fairseq-train's configuration for one timed run, saving nothing. Its data is loaded in the
    measuring process itself: a loader's worker process, in a process that goes on after the run,
    takes seconds to stop."""
    sizes = _sizes(dry_run)
    flags = model_flags(name, sizes)
    flags = ["--arch", "rnnsearch_50", *flags[2:]] if name == "rnnsearch" else flags
    timed = timed_training_flags(
        batching, sizes.warmup + sizes.updates, sizes.log_interval, save_dir
    )
    device = ["--cpu"] if dry_run else []
    return train.parse([data_bin, "--user-dir", PLUGIN, *flags, *timed, "--no-save",
                        "--num-workers", 0, *device, *PRECISIONS[precision][1]])  # fmt: skip


def decode(cfg, dtype: torch.dtype, length: int, batch_size: int, device: str) -> dict:
    """Beam search over the test split, by a model built as fairseq-train's configuration ``cfg``
    builds it, with every hypothesis forced to ``length`` tokens and EOS: generated tokens per
    second (after one warm-up batch) and peak GPU memory."""
    task = tasks.setup_task(cfg.task)
    task.load_dataset("test")
    dataset = task.dataset("test")
    batches = [
        dataset.collater([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        for start in range(0, len(dataset), batch_size)
    ]
    with train.PeakMemory(device) as peak, torch.no_grad():
        model = task.build_model(cfg.model).to(device=device, dtype=dtype).eval()
        generator = SequenceGenerator([model], task.target_dictionary, beam_size=BEAM,
                                      min_len=length, max_len_a=0, max_len_b=length)  # fmt: skip
        on_device = [
            {"net_input": {k: v.to(device) for k, v in batch["net_input"].items()}}
            for batch in batches
        ]
        generator.generate([model], on_device[0])  # warm-up
        peak.reset()
        start = time.perf_counter()
        sentences = 0
        for batch in on_device[1:]:
            hypotheses = generator.generate([model], batch)
            sentences += len(hypotheses)
            assert all(len(h[0]["tokens"]) == length + 1 for h in hypotheses)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    return {"tokens_per_second": sentences * (length + 1) / seconds, "peak_mib": peak.mib}


def matmul_peak_tflops(dtype, device: str, size: int, repeats: int = 10) -> float:
    """Square matrix products in ``dtype``, in this process's TF32 setting: TFLOP/s."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    if device == "cuda":
        torch.cuda.synchronize()
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e12


def _recorded(measure, *args) -> dict:
    """``measure(*args)``, or its error: recorded, so that the other measurements still run."""
    try:
        return measure(*args)
    except Exception as error:
        return {"error": f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}"}


def _timed_training(cfg, warmup: int) -> dict:
    """Target words/s after the warm-up, peak memory, and what the fast path compiled and
    recorded (in the warm-up), with the seconds each took."""
    log, peak = train.run(cfg)
    compiled = compilations(log)
    return {
        "words_per_second": training_words_per_second(log, warmup),
        "peak_mib": peak,
        "compiled": compiled,
        "compiling_seconds": compiling_seconds(compiled),
        "fast_path_warnings": fast_path_warnings(log),
    }


def measure(precision: str, data_bin: Path, work: Path, dry_run: bool) -> dict:
    """Every measurement of one precision, in this process (whose TF32 setting is that
    precision's)."""
    sizes, device, dtype = _sizes(dry_run), _device(dry_run), PRECISIONS[precision][2]
    row = {"matmul_peak_tflops": matmul_peak_tflops(dtype, device, 256 if dry_run else 8192)}
    for name in MODELS:
        row[name] = {"training": {}}
    configurations = {}
    for batching, options in _batchings(sizes).items():
        for name in MODELS:  # alternating
            cfg = _configuration(name, precision, options, data_bin, work / name, dry_run)
            configurations.setdefault(name, cfg)  # the first batches, the paper's, decode too
            row[name]["training"][batching] = _recorded(_timed_training, cfg, sizes.warmup)
    for name in MODELS:
        row[name]["decoding"] = _recorded(
            decode, configurations[name], dtype, sizes.decode_length, sizes.batch, device
        )
    return row


def run(kit: Kit) -> dict:
    sizes = _sizes(kit.dry_run)
    data_bin = _corpus(kit, sizes)
    flops = rnnsearch_training_flops_per_target_word(sizes, *average_lengths(data_bin))
    results = {}
    for precision, (tf32, _, _) in PRECISIONS.items():
        work = kit.work / "paper-size" / precision.replace(", ", "-").replace(" ", "-")
        dry_run = ["--dry-run"] if kit.dry_run else []
        try:
            output = kit.python(
                "-m", "bench.gpu.paper_size", precision, data_bin, work, *dry_run, tf32=tf32
            )
        except RuntimeError as error:  # recorded; the other precisions still run
            results[precision] = {"error": str(error).strip().splitlines()[-1]}
            continue
        row = result_of(output)
        row["rnnsearch_share_of_peak"] = {
            batching: training["words_per_second"] * flops / 1e12 / row["matmul_peak_tflops"]
            for batching, training in row["rnnsearch"]["training"].items()
            if "words_per_second" in training
        }
        results[precision] = row
    return {
        "sizes": {k: v for k, v in vars(sizes).items() if not isinstance(v, tuple)},
        "flops_per_target_word": flops,
        "beam": BEAM,
        "results": results,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("precision", choices=list(PRECISIONS))
    parser.add_argument("data_bin", type=Path)
    parser.add_argument("work", type=Path, help="the runs' save folders go here")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes, on the CPU")
    args = parser.parse_args()
    print_result(measure(args.precision, args.data_bin, args.work, args.dry_run))


if __name__ == "__main__":
    main()
