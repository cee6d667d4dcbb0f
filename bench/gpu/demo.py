"""The demo corpus (scripts/make_demo_corpus.py) and small rnnsearch models trained on it, made once
per work folder and shared by the sections that need them."""

import re
from pathlib import Path
from typing import List, Tuple

from bahdanau_tools.demo_recipe import OPTIMIZER

from ..common import PLUGIN, REPO
from .kit import Kit

# scripts/demo.sh's model and recipe; a dry run trains a tiny one for a few updates
SIZES = {"embed": 64, "hidden": 128, "maxout": 64}
DRY_RUN_SIZES = {"embed": 8, "hidden": 8, "maxout": 4}
UPDATES, DRY_RUN_UPDATES = 300, 3


def data_bin(kit: Kit) -> Path:
    """The demo corpus, binarized: 2,000 training pairs, 100 validation and 100 test pairs."""
    root = kit.work / "demo"
    if not (root / "data-bin" / "dict.en.txt").exists():
        kit.python(
            REPO / "scripts" / "make_demo_corpus.py",
            "--out",
            root / "raw",
            "--train",
            2000,
            "--valid",
            100,
            "--test",
            100,
        )
        kit.binarize(root, "--joined-dictionary")
    return root / "data-bin"


def train(kit: Kit, name: str, precision: List[str]) -> Tuple[float, Path]:
    """rnnsearch trained on the demo corpus with these precision options (once per name): its last
    validation loss and its checkpoint."""
    save_dir = kit.work / "demo" / f"checkpoints-{name}"
    log_file = save_dir / "train.log"
    if not log_file.exists():
        sizes = DRY_RUN_SIZES if kit.dry_run else SIZES
        updates = DRY_RUN_UPDATES if kit.dry_run else UPDATES
        log = kit.fairseq(
            "train",
            data_bin(kit),
            "--user-dir",
            PLUGIN,
            "--arch",
            "rnnsearch_50",
            "--seed",
            1,
            "--encoder-embed-dim",
            sizes["embed"],
            "--decoder-embed-dim",
            sizes["embed"],
            "--encoder-hidden-dim",
            sizes["hidden"],
            "--decoder-hidden-dim",
            sizes["hidden"],
            "--attention-dim",
            sizes["hidden"],
            "--maxout-dim",
            sizes["maxout"],
            *OPTIMIZER,
            "--max-update",
            updates,
            "--validate-interval-updates",
            updates,
            "--save-dir",
            save_dir,
            "--no-epoch-checkpoints",
            "--data-buffer-size",
            "0",
            "--log-format",
            "simple",
            *kit.device_flags(),
            *precision,
        )
        log_file.write_text(log)
    losses = re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", log_file.read_text())
    return float(losses[-1]), save_dir / "checkpoint_last.pt"


def translations(kit: Kit, checkpoint: Path, device: str, tf32: bool) -> List[str]:
    """fairseq-generate's best hypothesis for each test sentence, in order, at beam 5."""
    log = kit.fairseq(
        "generate",
        data_bin(kit),
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoint,
        "--beam",
        5,
        "--batch-size",
        50,
        *(["--cpu"] if device == "cpu" else []),
        tf32=tf32,
    )
    hypotheses = re.findall(r"^H-(\d+)\t\S+\t(.*)$", log, flags=re.MULTILINE)
    return [text for _, text in sorted(hypotheses, key=lambda pair: int(pair[0]))]
