"""configs/: the paper's training (Appendix B.2) as fairseq-hydra-train recipes, and the same recipe
with fairseq-train flags (scripts/train_paper_recipe.sh); the CPU recipe of docs/results.md's runs
(scripts/multi30k_recipe.sh) as one more."""

import os
import re
import subprocess
from argparse import Namespace
from pathlib import Path

import fairseq
import pytest
import torch
from fairseq import options
from fairseq.dataclass import initialize
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bahdanau_plugin import provenance
from bahdanau_plugin.errors import ConfigurationError

from ..support.paths import PLUGIN, REPO
from ..support.models import paper_sizes, tiny_flags
from ..support.tools import fairseq_env, run
from ..support.training import ARCHITECTURES

pytestmark = pytest.mark.long  # run first: tests/conftest.py

CONFIGS = REPO / "configs"
PAPER_RECIPE = REPO / "scripts" / "train_paper_recipe.sh"
CPU_RECIPE = "rnnsearch_cpu"
# each recipe, and the architecture it trains
RECIPES = {**{arch: arch for arch in ARCHITECTURES}, CPU_RECIPE: "rnnsearch"}
UPDATES = 2
# the sections of the configuration that make the recipe (checkpoint and logging are not)
RECIPE_SECTIONS = (
    "model",
    "optimizer",
    "optimization",
    "dataset",
    "criterion",
    "lr_scheduler",
    "task",
)


def as_hydra_overrides(flags):
    """--encoder-embed-dim 8 -> model.encoder_embed_dim=8"""
    return [
        f"model.{flag[2:].replace('-', '_')}={value}"
        for flag, value in zip(flags[::2], flags[1::2])
    ]


def recipe_configuration(arch, *overrides):
    """What `fairseq-hydra-train --config-dir configs --config-name ARCH task.data=DATA
    [OVERRIDES]` trains with, built as fairseq_cli/hydra_train.py builds it, without training."""
    initialize.hydra_init(arch)  # fairseq's schema under the recipe's name
    # version 1.1, as fairseq's @hydra.main (which names none); fairseq's own compose, used to read
    # fairseq-train's flags, refuses to run under a later version base
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.1"):
        cfg = compose(config_name=arch, overrides=["task.data=DATA", *overrides])
    # the defaults of the model, task and optimizer that hydra does not know, filled in as
    # fairseq-train does once it has loaded the plugin (fairseq_patches.read_the_options_as_given)
    initialize.add_defaults(cfg)
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))


def cpu_recipe_flags():
    """The fairseq-train flags of docs/results.md's RNNsearch: scripts/multi30k_recipe.sh's sizes
    and recipe, and the options run_multi30k_experiment.sh adds that are not about time, seed or
    logging."""
    script = (
        f"repo={REPO}; source {REPO / 'scripts' / 'multi30k_recipe.sh'}; "
        'printf "%s\\0" "${sizes[@]}" --attention-dim "$DIM" "${recipe[@]}"'
    )
    printed = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    recipe = printed.stdout.split("\0")[:-1]
    return ["DATA", "--user-dir", PLUGIN, "--arch", "rnnsearch", *recipe,
            "--skip-invalid-size-inputs-valid-test", "--data-buffer-size", "0"]  # fmt: skip


def paper_recipe_flags(arch, folder, data="DATA", save_dir="SAVE_DIR"):
    """The arguments scripts/train_paper_recipe.sh gives fairseq-train, caught by a stand-in; its
    DATA a folder with a dictionary (the script checks that), named as the recipe names its data
    unless given, as the SAVE_DIR, both relative to folder."""
    stand_in = folder / "fairseq-train"
    stand_in.write_text('#!/bin/sh\nprintf "%s\\0" "$@" > "$(dirname "$0")/arguments"\n')
    stand_in.chmod(0o755)
    (folder / data).mkdir()
    (folder / data / "dict.en.txt").touch()
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(
        ["bash", str(PAPER_RECIPE), arch, data, save_dir], env=env, cwd=folder, check=True
    )
    return (folder / "arguments").read_text().split("\0")[:-1]


def flags_configuration(flags):
    """What fairseq-train builds from these flags: its parser, the architecture's defaults, then
    the conversion to the configuration it trains with."""
    return convert_namespace_to_omegaconf(
        options.parse_args_and_arch(options.get_training_parser(), flags)
    )


def setting(cfg, section, key):
    """fairseq-train keeps a legacy component's options (adadelta's) as the whole argparse
    Namespace."""
    options_of_section = cfg[section]
    if isinstance(options_of_section, Namespace):
        return getattr(options_of_section, section if key == "_name" else key)
    return options_of_section[key]


def hydra_train(recipe, data_bin, root, *overrides, updates=UPDATES, check=True):
    """`fairseq-hydra-train` of a recipe at tiny sizes on the CPU, from the repository root as
    documented, into root/checkpoints; its output."""
    return run(
        "fairseq-hydra-train",
        "--config-dir",
        CONFIGS,
        "--config-name",
        recipe,
        f"task.data={data_bin}",
        f"checkpoint.save_dir={root / 'checkpoints'}",
        f"optimization.max_update={updates}",
        "common.cpu=true",
        f"hydra.run.dir={root / 'hydra'}",
        *as_hydra_overrides(tiny_flags(RECIPES[recipe])),
        *overrides,
        cwd=REPO,
        check=check,
    )


@pytest.fixture(scope="module")
def hydra_checkpoints(data_bin, tmp_path_factory):
    """Each recipe trained for 2 updates at tiny sizes."""
    paths = {}
    for recipe in RECIPES:
        root = tmp_path_factory.mktemp(f"hydra-{recipe}")
        hydra_train(recipe, data_bin, root)
        paths[recipe] = root / "checkpoints" / "checkpoint_last.pt"
    return paths


@pytest.mark.parametrize("recipe", RECIPES)
def test_each_recipe_trains_with_fairseq_hydra_train(hydra_checkpoints, recipe):
    state = torch.load(hydra_checkpoints[recipe])
    assert state["cfg"]["model"]["_name"] == RECIPES[recipe]
    assert state["optimizer_history"][-1]["num_updates"] == UPDATES


@pytest.mark.parametrize("recipe", RECIPES)
def test_each_recipe_s_checkpoint_records_the_code_that_trained_it(hydra_checkpoints, recipe):
    """fairseq-hydra-train saves through the same wrapper as fairseq-train (provenance.py)."""
    runs = torch.load(hydra_checkpoints[recipe])["extra_state"][provenance.KEY]
    assert [run["fairseq"] for run in runs] == [fairseq.__version__]


def test_the_paper_recipe_script_trains_with_fairseq_train(data_bin, tmp_path):
    arch = "rnnsearch_50"
    completed = subprocess.run(
        [
            "bash",
            str(PAPER_RECIPE),
            arch,
            str(data_bin),
            str(tmp_path),
            *tiny_flags(arch),
            "--max-update",
            str(UPDATES),
            "--cpu",
        ],
        env=fairseq_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (
        torch.load(tmp_path / "checkpoint_last.pt")["optimizer_history"][-1]["num_updates"]
        == UPDATES
    )


def test_a_null_length_limit_over_a_named_recipe_trains_without_one(data_bin, tmp_path):
    """model.max_train_length=null over rnnsearch_50.yaml: fairseq filled the null back with the
    architecture's 50 (fairseq_patches.read_the_options_as_given)."""
    output = hydra_train(
        "rnnsearch_50", data_bin, tmp_path, "model.max_train_length=null", updates=1
    )
    state = torch.load(tmp_path / "checkpoints" / "checkpoint_last.pt")
    assert state["cfg"]["model"]["max_train_length"] is None
    assert "rnnsearch_50 trains on pairs of any length (max_train_length)" in output


def test_a_key_the_recipe_s_optimizer_does_not_take_is_refused_in_one_line_before_training(
    data_bin, tmp_path
):
    """fairseq's legacy adadelta never read it: the run trained with rho 0.9 unset, without a
    word (models/unknown_options.py). The line ends the command, as under fairseq-train, not
    hydra's traceback of the job (errors.print_hydra_jobs_errors_as_one_line)."""
    output = hydra_train(
        "rnnsearch_50", data_bin, tmp_path, "+optimizer.adadelta_rhoo=0.9", check=False
    )
    assert output.splitlines()[-1].startswith(
        "error: optimizer.adadelta_rhoo is not an option of the optimizer adadelta: it takes "
        "adadelta_rho, "
    )
    assert "Traceback" not in output and "Error executing job" not in output
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.parametrize(
    "override, line",
    [
        ("model.dropout=abc", "error: model.dropout=abc: Value 'abc' of type 'str' could not be "),
        ("optimizer.lr=0.1", "error: lr_scheduler.lr=0.1 is not a list: "),
    ],
    ids=["dropout", "learning-rate"],
)
def test_an_option_of_another_type_is_one_line_before_training(data_bin, tmp_path, override, line):
    """omegaconf's ValidationError, raised as fairseq filled in the defaults, was a traceback."""
    output = hydra_train("rnnsearch_50", data_bin, tmp_path, override, check=False)
    assert output.splitlines()[-1].startswith(line)
    assert "Traceback" not in output and "Error executing job" not in output
    assert not (tmp_path / "checkpoints").exists()


def test_max_tokens_beside_a_recipe_s_batch_size_is_said_to_do_nothing(data_bin, tmp_path):
    """80 sentences of at most 50 tokens a side never reach 8,000 tokens: the batches stay the
    batch size's, as without the option."""
    output = hydra_train("rnnsearch_50", data_bin, tmp_path, "dataset.max_tokens=8000", updates=1)
    assert "[WARNING] - --max-tokens 8000 never limits a batch here: --batch-size 80 " in output


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_each_recipe_is_the_papers_training(arch):
    cfg = recipe_configuration(arch)
    optimizer = cfg.optimizer
    assert (optimizer._name, optimizer.adadelta_rho, optimizer.adadelta_eps, optimizer.lr) == (
        "adadelta",
        0.95,
        1e-6,
        [1.0],
    )
    assert cfg.optimization.clip_norm == 1.0
    assert cfg.dataset.batch_size == 80
    assert cfg.model.max_train_length == int(arch.split("_")[1])
    # the paper's cost, each sentence's log-likelihood averaged over the minibatch's sentences,
    # whose gradient is the one clipped at 1: not fairseq's average over target words
    assert cfg.optimization.sentence_avg and cfg.criterion.sentence_avg


@pytest.mark.parametrize("override", ["optimizer.lr=[0.5]", "optimization.lr=[0.5]"])
def test_either_learning_rate_the_paper_recipe_names_overridden_is_the_one_trained_with(override):
    """fairseq's lr_scheduler sets its lr (optimization.lr) at every epoch, over the one adadelta
    was built with (optimizer.lr)."""
    assert recipe_configuration("rnnsearch_50", override).lr_scheduler.lr == [0.5]


def test_an_option_of_the_recipes_learning_rate_schedule_can_be_overridden():
    cfg = recipe_configuration("rnnsearch_50", "lr_scheduler.warmup_updates=4000")
    assert (cfg.lr_scheduler._name, cfg.lr_scheduler.warmup_updates) == ("fixed", 4000)


def test_another_criterion_and_its_options_can_be_given_over_a_recipe():
    cfg = recipe_configuration(
        "rnnsearch_50",
        "criterion._name=label_smoothed_cross_entropy",
        "+criterion.label_smoothing=0.1",
    )
    assert (cfg.criterion._name, cfg.criterion.label_smoothing) == (
        "label_smoothed_cross_entropy",
        0.1,
    )


# A misspelt option added to a block of a recipe, and the options of its component named nearest
# first: not the block replaced by one of that key alone, which fairseq failed to build in a
# traceback (Missing key _name).
MISSPELT_OPTIONS = {
    "schedule": (
        ["+lr_scheduler.warmup_update=4000"],
        "lr_scheduler.warmup_update is not an option of the learning-rate scheduler fixed: it "
        "takes warmup_updates, ",
    ),
    "criterion": (
        ["criterion._name=label_smoothed_cross_entropy", "+criterion.label_smothing=0.1"],
        "criterion.label_smothing is not an option of the criterion label_smoothed_cross_entropy: "
        "it takes label_smoothing, ",
    ),
}


@pytest.mark.parametrize("block", MISSPELT_OPTIONS)
def test_a_misspelt_option_added_to_a_recipe_s_block_is_refused_in_one_line(block):
    overrides, refusal = MISSPELT_OPTIONS[block]
    with pytest.raises(ConfigurationError, match=re.escape(refusal)):
        recipe_configuration("rnnsearch_50", *overrides)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_each_recipe_has_the_papers_sizes(arch):
    model = recipe_configuration(arch).model
    sizes = paper_sizes(arch.split("_")[0])
    assert {key: model[key] for key in sizes} == sizes


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_fairseq_train_flags_give_the_same_configuration_as_the_recipe(arch, tmp_path):
    from_recipe = recipe_configuration(arch)
    from_flags = flags_configuration(paper_recipe_flags(arch, tmp_path))
    for section in RECIPE_SECTIONS:
        for key, value in from_recipe[section].items():
            assert setting(from_flags, section, key) == value, f"{section}.{key}"


def test_the_paper_recipe_script_passes_paths_that_start_with_a_dash_as_paths(tmp_path):
    """fairseq-train's parser took DATA -data for an option ('the following arguments are
    required: data'), and SAVE_DIR -checkpoints too ('argument --save-dir: expected one
    argument')."""
    flags = paper_recipe_flags("rnnsearch_50", tmp_path, "-data", "-checkpoints")
    cfg = flags_configuration(flags)
    assert Path(cfg.task.data) == Path("-data")
    assert Path(cfg.checkpoint.save_dir) == Path("-checkpoints")


def test_the_cpu_recipe_is_the_one_docs_results_measured():
    """Adam at 3e-3, dropout 0.2, batches of 80, every size 256: the same configuration as the
    fairseq-train flags of docs/results.md's runs."""
    from_recipe = recipe_configuration(CPU_RECIPE)
    from_flags = flags_configuration(cpu_recipe_flags())
    for section in RECIPE_SECTIONS:
        for key, value in from_recipe[section].items():
            assert setting(from_flags, section, key) == value, f"{section}.{key}"


def test_the_cpu_recipe_logs_its_progress_as_often_as_docs_training_says():
    """A line every few updates, so that a first training on 2 cores shows progress within half
    a minute; docs/training.md's fairseq-train command of the same recipe logs as often."""
    training = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
    documented = re.findall(r"--log-interval (\d+)", training)
    assert documented and {int(interval) for interval in documented} == {
        recipe_configuration(CPU_RECIPE).common.log_interval
    }


@pytest.mark.parametrize("option", ["--memory-efficient-fp16", "--memory-efficient-bf16"])
def test_the_paper_recipe_script_refuses_memory_efficient_half_precision_in_one_line(
    option, tmp_path
):
    """fairseq's memory-efficient half precision supports no Adadelta; --fp16 and --bf16 do."""
    completed = subprocess.run(
        ["bash", str(PAPER_RECIPE), "rnnsearch_50", "DATA", str(tmp_path), option],
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1
    assert completed.stderr.startswith(f"error: {option} does not support Adadelta")
    assert f"use {option.replace('memory-efficient-', '')}" in completed.stderr


@pytest.mark.parametrize("given", [["--optimizer", "adam"], ["--optimizer=adam"]])
def test_the_paper_recipe_script_refuses_another_optimizer_in_one_line(given, tmp_path):
    """fairseq-train refused the recipe's own --adadelta-rho and --adadelta-eps, which the user
    never typed, as unrecognized arguments of adam."""
    data = tmp_path / "data-bin"
    data.mkdir()
    (data / "dict.en.txt").touch()
    completed = subprocess.run(
        ["bash", str(PAPER_RECIPE), "rnnsearch_50", str(data), str(tmp_path / "ckpt"), *given],
        env=fairseq_env(),
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        "error: --optimizer: the paper's recipe trains with Adadelta, and gives fairseq-train its "
        "--adadelta-rho and --adadelta-eps, which another optimizer does not take: for another "
        "optimizer, run fairseq-train itself, as docs/training.md's CPU recipe (Adam) does\n"
    )
