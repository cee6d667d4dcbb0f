"""Section 4: rnnsearch_50 against fairseq's lstm at the paper's sizes, on the GPU.

Both at matched sizes (bench/common.py's ``model_flags``: embeddings 620, encoder GRU/LSTM 1000
per direction, decoder 1000, alignment 1000, an output layer of 500 before the softmax) on a
synthetic corpus of the paper's shape (vocabulary 30,000, sentences of 10 to 50 words), batches of
80 sentences, in float32 and bfloat16, alternating the models:
- training: target words per second after a warm-up, from fairseq's own log, and the peak GPU
  memory (``python -m bench.gpu.train``, fairseq-train in one process);
- decoding: beam 12 with every hypothesis forced to the same length, generated tokens per second
  and peak GPU memory (``python -m bench.gpu.paper_size decode``, fairseq's SequenceGenerator);
- rnnsearch's training FLOPs per target word (bench/common.py's formula) over the GPU's
  measured matrix-multiply peak in that precision.
"""

import argparse
import random
import re
import time
from pathlib import Path
from types import SimpleNamespace

import torch

from ..common import (
    PLUGIN,
    average_lengths,
    model_flags,
    rnnsearch_training_flops_per_target_word,
    timed_training_flags,
    training_words_per_second,
)
from .kit import Kit, print_result, result_of
from .train import PEAK_LINE

MODELS = ("rnnsearch", "lstm")
PRECISIONS = {"float32": [], "bfloat16": ["--bf16"]}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
BEAM = 12
# sizes (bench/common.py's names), corpus (pairs of `lengths` words), batches, and updates
PAPER = dict(embed=620, hidden=1000, maxout=500, vocab=30000, pairs=5000, lengths=(10, 50),
             batch=80, warmup=10, updates=50, log_interval=5, decode_length=30,
             test=400)  # fmt: skip
DRY_RUN = {**PAPER, "embed": 8, "hidden": 8, "maxout": 4, "vocab": 200, "pairs": 200,
           "lengths": (3, 8), "batch": 8, "warmup": 1, "updates": 2, "log_interval": 1,
           "decode_length": 5, "test": 24}  # fmt: skip


def _corpus(kit: Kit, sizes) -> Path:
    """Random sentences over a vocabulary of sizes.vocab words, binarized."""
    root = kit.work / "paper-size"
    if (root / "data-bin" / "dict.en.txt").exists():
        return root / "data-bin"
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


def _flags(name: str, sizes):
    flags = [str(flag) for flag in model_flags(name, sizes)]
    return ["--arch", "rnnsearch_50", *flags[2:]] if name == "rnnsearch" else flags


def _train(kit: Kit, name: str, precision: str, data_bin: Path, sizes) -> dict:
    save_dir = kit.work / "paper-size" / f"checkpoints-{name}-{precision}"
    log = kit.python(
        "-m",
        "bench.gpu.train",
        data_bin,
        "--user-dir",
        PLUGIN,
        *_flags(name, sizes),
        *timed_training_flags(
            sizes.batch, sizes.warmup + sizes.updates, sizes.log_interval, save_dir
        ),
        *kit.device_flags(),
        *PRECISIONS[precision],
    )
    peak = re.search(rf"{re.escape(PEAK_LINE)} (\d+)", log)
    return {
        "words_per_second": training_words_per_second(log, sizes.warmup),
        "peak_mib": int(peak.group(1)) if peak else None,
        "checkpoint": str(save_dir / "checkpoint_last.pt"),
    }


def decode(
    checkpoint: str, data_bin: str, precision: str, length: int, batch_size: int, device: str
) -> dict:
    """Beam search over the test split with every hypothesis forced to ``length`` tokens and EOS:
    generated tokens per second (after one warm-up batch) and peak GPU memory."""
    import bahdanau_plugin  # noqa: F401  (safe loading of both models' checkpoints)
    from fairseq import checkpoint_utils
    from fairseq.sequence_generator import SequenceGenerator

    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [checkpoint], arg_overrides={"data": data_bin}
    )
    model = models[0].to(device=device, dtype=DTYPES[precision]).eval()
    task.load_dataset("test")
    generator = SequenceGenerator(
        [model],
        task.target_dictionary,
        beam_size=BEAM,
        min_len=length,
        max_len_a=0,
        max_len_b=length,
    )
    dataset = task.dataset("test")
    batches = [
        dataset.collater([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        for start in range(0, len(dataset), batch_size)
    ]
    on_device = [
        {"net_input": {k: v.to(device) for k, v in batch["net_input"].items()}} for batch in batches
    ]
    with torch.no_grad():
        generator.generate([model], on_device[0])  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        sentences = 0
        for batch in on_device[1:]:
            hypotheses = generator.generate([model], batch)
            sentences += len(hypotheses)
            assert all(len(h[0]["tokens"]) == length + 1 for h in hypotheses)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None
    return {"tokens_per_second": sentences * (length + 1) / seconds, "peak_mib": peak}


def _matmul_peak_tflops(dtype, device: str, size: int = 8192, repeats: int = 10) -> float:
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


def run(kit: Kit) -> dict:
    sizes = SimpleNamespace(**(DRY_RUN if kit.dry_run else PAPER))
    data_bin = _corpus(kit, sizes)
    flops = rnnsearch_training_flops_per_target_word(sizes, *average_lengths(data_bin))
    results = {}
    for precision in PRECISIONS:
        peak = _matmul_peak_tflops(DTYPES[precision], kit.device, size=256 if kit.dry_run else 8192)
        row = {"matmul_peak_tflops": peak}
        for name in MODELS:  # alternating, precision by precision
            try:
                trained = _train(kit, name, precision, data_bin, sizes)
                output = kit.python(
                    "-m",
                    "bench.gpu.paper_size",
                    "decode",
                    trained["checkpoint"],
                    data_bin,
                    precision,
                    sizes.decode_length,
                    sizes.batch,
                    kit.device,
                )
                row[name] = {"training": trained, "decoding": result_of(output)}
            except Exception as error:  # recorded; the other model and precision still run
                row[name] = {"error": str(error).strip().splitlines()[-1]}
        if "training" in row["rnnsearch"]:
            achieved = row["rnnsearch"]["training"]["words_per_second"] * flops / 1e12
            row["rnnsearch_share_of_peak"] = achieved / peak
        results[precision] = row
    return {
        "sizes": {k: v for k, v in vars(sizes).items() if not isinstance(v, tuple)},
        "flops_per_target_word": flops,
        "beam": BEAM,
        "results": results,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    decoding = commands.add_parser("decode", help="one decoding measurement, printed as JSON")
    decoding.add_argument("checkpoint")
    decoding.add_argument("data_bin")
    decoding.add_argument("precision", choices=sorted(PRECISIONS))
    decoding.add_argument("length", type=int)
    decoding.add_argument("batch_size", type=int)
    decoding.add_argument("device")
    args = parser.parse_args()
    print_result(
        decode(
            args.checkpoint,
            args.data_bin,
            args.precision,
            args.length,
            args.batch_size,
            args.device,
        )
    )


if __name__ == "__main__":
    main()
