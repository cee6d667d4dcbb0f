"""fairseq-train in half precision on CPU, through the paths fairseq allows there, learns like
float32.

fairseq 0.12 on CPU: --bf16 implies --tpu and fails without torch_xla, so it is not run here (the
bfloat16 gradients are tested in tests/models/test_half_precision.py). --fp16 converts the model
to float16 and keeps float32 master weights, as --bf16 does; its trainer calls .cuda() when a
gradient overflows, so on CPU the loss scale stays at 1, which is also what --bf16 uses.
"""

import re

import pytest

from .support.paths import PLUGIN
from .support.tools import run

SIZES = [
    "--encoder-embed-dim",
    "32",
    "--decoder-embed-dim",
    "32",
    "--encoder-hidden-dim",
    "32",
    "--decoder-hidden-dim",
    "32",
    "--attention-dim",
    "32",
    "--maxout-dim",
    "16",
]
FLOAT16 = [
    "--fp16",
    "--fp16-no-flatten-grads",
    "--fp16-init-scale",
    "1",
    "--fp16-scale-window",
    "1000000",
]


def train_validation_loss(data_bin, save_dir, updates, *precision):
    """fairseq-train rnnsearch for ``updates`` updates; the validation loss it reports last."""
    log = run(
        "fairseq-train",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--arch",
        "rnnsearch",
        *SIZES,
        "--cpu",
        "--seed",
        "1",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--clip-norm",
        "1.0",
        "--max-tokens",
        "2000",
        "--max-update",
        updates,
        "--save-dir",
        save_dir,
        "--no-save",
        "--log-format",
        "simple",
        *precision,
        timeout=600,
    )
    losses = re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", log)
    assert losses, log[-2000:]
    return float(losses[-1])


def test_float16_training_ends_within_5_percent_of_float32_s_validation_loss(data_bin, tmp_path):
    float32 = train_validation_loss(data_bin, tmp_path / "float32", 100)
    float16 = train_validation_loss(data_bin, tmp_path / "float16", 100, *FLOAT16)
    assert float32 < 5.0  # it learned: a uniform guess over the demo's vocabulary is about 6.4
    assert abs(float16 - float32) / float32 < 0.05


@pytest.mark.parametrize(
    "precision",
    [["--amp"], ["--memory-efficient-fp16", *FLOAT16[2:]]],
    ids=["amp", "memory-efficient-fp16"],
)
def test_other_mixed_precision_options_train(data_bin, tmp_path, precision):
    """--amp runs fairseq's CUDA autocast, which leaves CPU tensors in float32;
    --memory-efficient-fp16
    keeps the float16 parameters themselves."""
    assert train_validation_loss(data_bin, tmp_path, 3, *precision) < 7.0
