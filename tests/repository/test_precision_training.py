"""fairseq-train in half precision on CPU learns like float32.

--bf16 trains in bfloat16 with float32 master weights and no loss scaling (the plugin keeps
fairseq from turning it into --tpu: fairseq_patches.train_in_bfloat16_on_gpus_and_cpus). --fp16
does the same in float16; its trainer calls .cuda() when a gradient overflows, so on CPU the loss
scale stays at 1 and it needs --fp16-no-flatten-grads (its flat master weights are made on the
GPU). --amp runs fairseq's CUDA autocast, which leaves CPU tensors in float32.
"""

import re

import pytest

from bahdanau_tools.demo_recipe import OPTIMIZER

from ..support.paths import PLUGIN
from ..support.tools import run, tool_on_bytes

pytestmark = pytest.mark.long  # run first: tests/conftest.py

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
ON_CPU = ["--fp16-no-flatten-grads", "--fp16-init-scale", "1", "--fp16-scale-window", "1000000"]
UPDATES = 100


def train_validation_loss(data_bin, save_dir, updates, *precision):
    """fairseq-train rnnsearch for ``updates`` updates; the last validation loss it reports."""
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
        *OPTIMIZER,
        "--max-update",
        updates,
        "--save-dir",
        save_dir,
        "--no-save",
        "--data-buffer-size",
        "0",
        "--log-format",
        "simple",
        *precision,
        timeout=600,
    )
    losses = re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", log)
    assert losses, log[-2000:]
    return float(losses[-1])


@pytest.fixture(scope="module")
def float32_loss(data_bin, tmp_path_factory):
    loss = train_validation_loss(data_bin, tmp_path_factory.mktemp("float32"), UPDATES)
    assert loss < 5.0  # it learned: a uniform guess over the demo's vocabulary is about 6.4
    return loss


@pytest.mark.parametrize("precision", [["--fp16", *ON_CPU], ["--bf16"]], ids=["fp16", "bf16"])
def test_half_precision_training_ends_within_5_percent_of_float32_s_validation_loss(
    data_bin, tmp_path, float32_loss, precision
):
    loss = train_validation_loss(data_bin, tmp_path, UPDATES, *precision)
    assert loss != float32_loss  # it did compute in another precision
    assert abs(loss - float32_loss) / float32_loss < 0.05


@pytest.mark.parametrize(
    "precision",
    [["--amp"], ["--memory-efficient-fp16", *ON_CPU[1:]], ["--memory-efficient-bf16"]],
    ids=["amp", "memory-efficient-fp16", "memory-efficient-bf16"],
)
def test_other_mixed_precision_options_train(data_bin, tmp_path, precision):
    """--memory-efficient-fp16 and -bf16 keep the half-precision parameters themselves."""
    assert train_validation_loss(data_bin, tmp_path, 3, *precision) < 7.0


def test_fairseq_train_bf16_of_another_model_is_left_as_fairseq_parses_it(data_bin, tmp_path):
    """fairseq 0.12 turns --bf16 into --tpu, which needs torch_xla; the plugin changes that only
    for its own architectures."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--arch",
        "lstm",
        "--cpu",
        "--bf16",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        "--no-save",
        "--batch-size",
        "8",
    )
    assert returncode != 0
    assert "xla" in stderr.lower()
