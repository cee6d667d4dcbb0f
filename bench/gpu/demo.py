"""The demo corpus (scripts/make_demo_corpus.py) and small rnnsearch models trained on it, made in
the work folder of the section that needs them."""

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List

from bahdanau_tools.demo_recipe import OPTIMIZER

from ..common import model_flags
from ..paths import PLUGIN, REPO
from .kit import Kit, Started

# scripts/demo.sh's model and recipe; a dry run trains a tiny one
SIZES = {"embed": 64, "hidden": 128, "maxout": 64}
DRY_RUN_SIZES = {"embed": 8, "hidden": 8, "maxout": 4}
# A dry run's model, trained for a few updates, ends no sentence: each of its translations ran to
# fairseq-generate's limit, 200 tokens (100 sentences at beam 5, seconds of the CPU per process),
# where a few tokens compare the CPU with itself as well.
DRY_RUN_LENGTH = 10


def data_bin(kit: Kit) -> Path:
    """The demo corpus, binarized: 2,000 training pairs, 100 validation and 100 test pairs."""
    root = kit.work / "demo"
    if not (root / "data-bin" / "dict.en.txt").exists():
        kit.python(REPO / "scripts" / "make_demo_corpus.py", "--out", root / "raw",
                   "--train", 2000, "--valid", 100, "--test", 100)  # fmt: skip
        kit.binarize(root, "--joined-dictionary")
    return root / "data-bin"


def training(kit: Kit, save_dir: Path, *options, model: str = "rnnsearch") -> list:
    """fairseq-train's arguments for rnnsearch (or fairseq's lstm at matched sizes: bench/common.py)
    at the demo's sizes on the demo corpus, with the demo's optimizer, seed 1 and no dropout;
    ``options`` come last, and win."""
    sizes = SimpleNamespace(**(DRY_RUN_SIZES if kit.dry_run else SIZES))
    architecture = ["--arch", "rnnsearch_50"] if model == "rnnsearch" else []
    return [
        "-m", "fairseq_cli.train", data_bin(kit), "--user-dir", PLUGIN,
        *model_flags(model, sizes), *architecture, "--seed", 1, "--dropout", 0,
        *OPTIMIZER,
        "--save-dir", save_dir, "--no-epoch-checkpoints", "--data-buffer-size", 0,
        "--log-format", "simple", *kit.device_flags(), *options,
    ]  # fmt: skip


def start_training(
    kit: Kit, name: str, *options, side_by_side: int = 1, model: str = "rnnsearch"
) -> Started:
    """The demo model (or ``model``) trained with these options, saved in
    ``checkpoints(kit, name)``, one of ``side_by_side`` processes (Kit.env)."""
    arguments = training(kit, checkpoints(kit, name), *options, model=model)
    return kit.start(*arguments, side_by_side=side_by_side)


def checkpoints(kit: Kit, name: str) -> Path:
    return kit.work / "demo" / f"checkpoints-{name}"


def validation_losses(log: str) -> Dict[int, float]:
    """fairseq-train's validation losses in a log, by the number of updates they followed."""
    found = re.findall(r"valid on 'valid' subset \| loss ([\d.]+) .*?\| num_updates (\d+)", log)
    return {int(updates): float(loss) for loss, updates in found}


def start_translating(
    kit: Kit, checkpoint: Path, device: str, tf32: str, side_by_side: int = 1
) -> Started:
    """fairseq-generate of the test set at beam 5 (read with ``translations``), one of
    ``side_by_side`` processes (Kit.env); a dry run's translations at most DRY_RUN_LENGTH
    tokens long."""
    return kit.start("-m", "fairseq_cli.generate", data_bin(kit), "--user-dir", PLUGIN,
                     "--path", checkpoint, "--beam", 5, "--batch-size", 50,
                     *(["--cpu"] if device == "cpu" else []),
                     *(["--max-len-b", DRY_RUN_LENGTH] if kit.dry_run else []),
                     tf32=tf32, side_by_side=side_by_side)  # fmt: skip


def translations(log: str) -> List[str]:
    """fairseq-generate's best hypothesis for each test sentence, in order."""
    hypotheses = re.findall(r"^H-(\d+)\t\S+\t(.*)$", log, flags=re.MULTILINE)
    return [text for _, text in sorted(hypotheses, key=lambda pair: int(pair[0]))]
