"""configs/: the paper's training (Appendix B.2) as fairseq-hydra-train recipes, and the same recipe
with fairseq-train flags (scripts/train_paper_recipe.sh)."""

import subprocess
from argparse import Namespace

import pytest
import torch

from .helpers import ARCHITECTURES, REPO, TINY_FLAGS, fairseq_env, run

CONFIGS = REPO / "configs"
UPDATES = 2
# the sections of the saved configuration that make the recipe (checkpoint and logging are not)
RECIPE_SECTIONS = ("model", "optimizer", "optimization", "dataset", "criterion", "lr_scheduler", "task")


def tiny_sizes(arch):
    return TINY_FLAGS[arch.split("_")[0]]


def as_hydra_overrides(flags):
    """--encoder-embed-dim 8 -> model.encoder_embed_dim=8"""
    return [f"model.{flag[2:].replace('-', '_')}={value}" for flag, value in zip(flags[::2], flags[1::2])]


@pytest.fixture(scope="module")
def hydra_checkpoints(data_bin, tmp_path_factory):
    """Each recipe trained for 2 updates at tiny sizes, run from the repository root as documented."""
    paths = {}
    for arch in ARCHITECTURES:
        root = tmp_path_factory.mktemp(f"hydra-{arch}")
        run("fairseq-hydra-train", "--config-dir", CONFIGS, "--config-name", arch, f"task.data={data_bin}",
            f"checkpoint.save_dir={root / 'checkpoints'}", f"optimization.max_update={UPDATES}", "common.cpu=true",
            f"hydra.run.dir={root / 'hydra'}", *as_hydra_overrides(tiny_sizes(arch)), cwd=REPO)
        paths[arch] = root / "checkpoints" / "checkpoint_last.pt"
    return paths


def saved_configuration(checkpoint):
    return torch.load(checkpoint)["cfg"]


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_each_recipe_trains_with_fairseq_hydra_train(hydra_checkpoints, arch):
    state = torch.load(hydra_checkpoints[arch])
    assert state["cfg"]["model"]["_name"] == arch
    assert state["optimizer_history"][-1]["num_updates"] == UPDATES


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_each_recipe_is_the_papers_training(hydra_checkpoints, arch):
    cfg = saved_configuration(hydra_checkpoints[arch])
    optimizer = cfg["optimizer"]
    assert (optimizer["_name"], optimizer["adadelta_rho"], optimizer["adadelta_eps"], optimizer["lr"]) == (
        "adadelta", 0.95, 1e-6, [1.0])
    assert cfg["optimization"]["clip_norm"] == 1.0
    assert cfg["dataset"]["batch_size"] == 80
    assert cfg["model"]["max_train_length"] == int(arch.split("_")[1])


def setting(cfg, section, key):
    """fairseq-train saves legacy components' options (adadelta's) as the whole argparse Namespace."""
    options = cfg[section]
    if isinstance(options, Namespace):
        return getattr(options, section if key == "_name" else key)
    return options[key]


@pytest.mark.parametrize("arch", ["rnnsearch_50", "rnnencdec_30"])  # the recipes differ only in the model
def test_fairseq_train_flags_give_the_same_configuration_as_the_recipe(data_bin, hydra_checkpoints, arch, tmp_path):
    completed = subprocess.run(
        ["bash", str(REPO / "scripts" / "train_paper_recipe.sh"), arch, str(data_bin), str(tmp_path),
         *tiny_sizes(arch), "--max-update", str(UPDATES), "--cpu"],
        env=fairseq_env(), capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    from_flags = saved_configuration(tmp_path / "checkpoint_last.pt")
    from_recipe = saved_configuration(hydra_checkpoints[arch])
    for section in RECIPE_SECTIONS:
        for key, value in from_recipe[section].items():
            assert setting(from_flags, section, key) == value, f"{section}.{key}"
