"""The fairseq-train command that makes the tests' checkpoints."""

from .paths import PLUGIN
from .models import tiny_flags
from .tools import run

ARCHITECTURES = ["rnnsearch_30", "rnnsearch_50", "rnnencdec_30", "rnnencdec_50"]


def train_command(data_bin, save_dir, arch, *extra):
    """fairseq-train with the paper's optimizer and clipping, at tiny sizes (later flags win), as
    the project's commands run it: without fairseq's read-ahead thread (--data-buffer-size 0)."""
    return [
        data_bin,
        "--user-dir",
        PLUGIN,
        "--arch",
        arch,
        *tiny_flags(arch),
        "--cpu",
        "--optimizer",
        "adadelta",
        "--adadelta-rho",
        "0.95",
        "--adadelta-eps",
        "1e-6",
        "--lr",
        "1.0",
        "--clip-norm",
        "1.0",
        "--batch-size",
        "80",
        "--data-buffer-size",
        "0",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--log-format",
        "simple",
        "--log-interval",
        "1",
        "--seed",
        "3",
        *extra,
    ]


def train(data_bin, save_dir, arch, *extra):
    return run("fairseq-train", *train_command(data_bin, save_dir, arch, *extra))
