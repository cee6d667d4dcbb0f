"""What importing the plugin changes in fairseq, torch and Python
(bahdanau_plugin/fairseq_patches.py),
that it changes it once, that fairseq-train's batches stay fairseq's own, and what the project's
options do instead of changes: fairseq-generate translates every test sentence with these models,
and a run without fairseq's read-ahead thread (--data-buffer-size 0) exits cleanly mid-epoch."""

import argparse
import importlib
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import types

import pytest
import torch
from fairseq import checkpoint_utils, utils
from fairseq.data import Dictionary
from fairseq.dataclass import initialize
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.models import ARCH_CONFIG_REGISTRY
from fairseq.search import LengthConstrainedBeamSearch
from fairseq.tasks.translation import TranslationConfig, TranslationTask
from omegaconf import OmegaConf

import bahdanau_plugin
from bahdanau_plugin import fairseq_patches
from bahdanau_plugin.errors import ConfigurationError, MissingPathError
from bahdanau_plugin.models.language_pair import LANGUAGES_GIVEN

from ..support.demo_data import TEST_SENTENCES
from ..support.paths import PLUGIN
from ..support.tools import fairseq_env, fairseq_tool, python_program, run
from ..support.training import train_command

pytestmark = pytest.mark.long  # run first: tests/conftest.py

ABORTED = -6  # SIGABRT, as libstdc++'s std::terminate ends a process
FAIRSEQS_SAVE = checkpoint_utils.torch_persistent_save

# fairseq-train's batches of the training split in epoch 1 (sentences ordered by length, batches
# shuffled), asked as fairseq-train asks, with its defaults: --required-batch-size-multiple 8.
# Batches of 7 leave 2,000 % 7 = 5 sentences for a last batch, which that multiple leaves out.
TRAINING_BATCHES = """
import json, sys
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.tasks.translation import TranslationConfig, TranslationTask
if sys.argv[2] == "with-plugin":
    import bahdanau_plugin
parser = options.get_training_parser()
arguments = [sys.argv[1], "--arch", "lstm", "--batch-size", "7", "--seed", "3"]
cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, arguments))
task = tasks.setup_task(cfg.task)
task.load_dataset(cfg.dataset.train_subset)
iterator = task.get_batch_iterator(
    task.dataset(cfg.dataset.train_subset), max_sentences=cfg.dataset.batch_size,
    ignore_invalid_inputs=True,
    required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
    seed=cfg.common.seed, epoch=1)
print(json.dumps([batch["id"].tolist() for batch in iterator.next_epoch_itr(shuffle=True)]))
"""

# fairseq-generate with the plugin, its models batching as fairseq would batch any other's.
GENERATE_WITHOUT_THE_PROTECTION = """
import sys
from bahdanau_plugin.models import inference_setup
inference_setup.batch_every_sentence = lambda cfg: None
from fairseq_cli import generate
sys.argv[0] = "fairseq-generate"
generate.cli_main()
"""

# fairseq's epoch iterator, with the read-ahead buffer of sys.argv[1] batches; each batch takes a
# long GIL-free torch operation, so a reading thread is inside torch when the main thread exits.
EXIT_WHILE_FAIRSEQ_READS_BATCHES = """
import sys
import torch
from fairseq.data import iterators
torch.set_num_threads(1)

class SlowBatches(torch.utils.data.Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, index):
        matrix = torch.ones(1500, 1500)
        return (matrix @ matrix).sum().item()

batches = iterators.EpochBatchIterator(
    SlowBatches(), collate_fn=list, batch_sampler=[[index] for index in range(1000)],
    buffer_size=int(sys.argv[1]))
next(batches.next_epoch_itr(shuffle=False))
"""


def python(*args):
    """A fresh Python of the tests' environment, run with args."""
    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        env=fairseq_env(),
        timeout=300,
    )


def training_batches(data_bin, plugin):
    completed = python("-c", TRAINING_BATCHES, data_bin, plugin)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.splitlines()[-1])


# What a fresh Python that imports the plugin, as a notebook or a script does, finds of its
# excepthook and its standard input: each as it was, or how it changed.
IMPORT_IN_A_PROGRAM = """
import sys
hook, stdin, encoding, errors = sys.excepthook, sys.stdin, sys.stdin.encoding, sys.stdin.errors
import bahdanau_plugin
print(sys.excepthook is hook, sys.stdin is stdin, sys.stdin.encoding == encoding,
      sys.stdin.errors == errors)
"""


def test_importing_the_plugin_makes_exactly_these_changes():
    assert [change.__name__ for change in fairseq_patches.CHANGES] == [
        "limit_onednn_caches",
        "read_an_empty_torch_cache_folder_as_unset",
        "print_fairseq_tools_errors_as_one_line",
        "stop_reading_ahead_as_commands_end",
        "allow_fairseq_checkpoint_types",
        "load_checkpoints_weights_only_in_commands",
        "decode_standard_input_leniently",
        "read_an_input_file_as_standard_input",
        "write_standard_output_in_utf8",
        "keep_freed_memory_for_reuse_in_training",
        "train_in_bfloat16_on_gpus_and_cpus",
        "refuse_ranks_outside_the_world_in_training",
        "read_the_options_as_given",
        "refuse_bad_paths_in_translation",
        "log_at_the_level_of_fairseqs_tools",
        "hide_dependency_warnings",
        "own_the_save_dir_in_training",
        "validate_every_sentence_in_training",
        "remember_the_languages_given",
        "match_the_source_length_in_words",
    ]


# Where torch's compiler keeps its cache, in a program that imports the plugin, then compiles.
CACHE_FOLDER_IN_A_PROGRAM = """
import bahdanau_plugin
from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir
print(cache_dir() == default_cache_dir())
"""


def test_an_empty_torch_cache_folder_is_read_as_unset_not_as_the_working_folder(tmp_path):
    """TORCHINDUCTOR_CACHE_DIR= (a script's unset variable): torch would take the working folder
    for its cache and fill it as the step compiles; the plugin imported, torch's default."""
    environment = {**fairseq_env(), "TORCHINDUCTOR_CACHE_DIR": ""}
    completed = python_program(CACHE_FOLDER_IN_A_PROGRAM, env=environment, cwd=tmp_path)
    assert completed.stdout.split()[-1:] == ["True"]
    assert list(tmp_path.iterdir()) == []


def test_importing_the_plugin_in_a_program_leaves_its_excepthook_and_standard_input_alone():
    completed = python_program(
        IMPORT_IN_A_PROGRAM, stdin="", env={**fairseq_env(), "PYTHONIOENCODING": "utf-8"}
    )
    assert completed.stdout.split() == ["True"] * 4


# What a program that imports fairseq, then the plugin, finds of its logging level and warning
# filters after the plugin's import: each as fairseq's import left it, or not.
IMPORT_AFTER_FAIRSEQ = """
import logging, warnings
import fairseq
level, filters = logging.getLogger().level, list(warnings.filters)
import bahdanau_plugin
print(logging.getLogger().level == level, warnings.filters == filters)
"""


def test_importing_the_plugin_in_a_program_leaves_its_logging_level_and_warnings_alone():
    completed = python("-c", IMPORT_AFTER_FAIRSEQ)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.split() == ["True", "True"]


def test_the_plugin_s_commands_print_no_debug_lines(data_bin, checkpoints, tmp_path):
    """fairseq's import sets the root logger to DEBUG: bahdanau-plot-alignment printed 97 lines of
    matplotlib's font search."""
    completed = subprocess.run(
        [
            fairseq_tool("bahdanau-plot-alignment"),
            "--checkpoint",
            checkpoints["rnnsearch_50"],
            "--data",
            data_bin,
            "--out-dir",
            tmp_path,
            "the dog sees a cat",
        ],
        capture_output=True,
        text=True,
        env=fairseq_env(),
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "DEBUG" not in completed.stderr


def test_importing_the_plugin_again_in_a_fairseq_tool_installs_the_one_line_errors_once(
    monkeypatch,
):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/fairseq-generate"])
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    fairseq_patches.print_fairseq_tools_errors_as_one_line()
    installed = sys.excepthook
    assert installed is not sys.__excepthook__
    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    assert sys.excepthook is installed


def test_importing_the_plugin_again_wraps_fairseq_train_s_conversion_once():
    from fairseq_cli import train

    fairseq_patches.train_in_bfloat16_on_gpus_and_cpus()
    wrapped = train.convert_namespace_to_omegaconf
    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    assert train.convert_namespace_to_omegaconf is wrapped
    assert wrapped.__wrapped__ is convert_namespace_to_omegaconf


@pytest.fixture
def conversions(monkeypatch):
    """fairseq-generate's and fairseq-interactive's conversion of their parsed arguments, wrapped
    as importing the plugin wraps them where their modules are loaded, by module; restored after
    the test."""
    from fairseq_cli import generate, interactive

    modules = {"generate": generate, "interactive": interactive}
    for module in modules.values():
        monkeypatch.setattr(
            module, "convert_namespace_to_omegaconf", convert_namespace_to_omegaconf
        )
    fairseq_patches.refuse_bad_paths_in_translation()
    return {name: module.convert_namespace_to_omegaconf for name, module in modules.items()}


def test_importing_the_plugin_again_wraps_the_translation_tools_conversions_once(conversions):
    from fairseq_cli import generate, interactive

    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    modules = {"generate": generate, "interactive": interactive}
    for name, module in modules.items():
        assert module.convert_namespace_to_omegaconf is conversions[name]
        assert conversions[name].__wrapped__ is convert_namespace_to_omegaconf


def parsed(tool, checkpoint, *arguments):
    """fairseq-generate's or fairseq-interactive's parsed arguments: DATA --user-dir PLUGIN --path
    checkpoint, arguments after, or the data folder in place of DATA where the first argument is
    not an option."""
    from fairseq import options

    given = ["data-bin", "--user-dir", str(PLUGIN), "--path", str(checkpoint)]
    if arguments and not arguments[0].startswith("--"):
        given, arguments = [arguments[0], *given[1:]], arguments[1:]
    parser = options.get_generation_parser(interactive=tool == "interactive")
    return options.parse_args_and_arch(parser, [*given, *arguments])


def unexpanded_home_line(option, path):
    return (
        f"{option} {path} starts with a folder named '~' in the current folder, not a home "
        "folder: the shell expands '~' only at the start of a word, not after '=' nor in quotes; "
        f"write {os.path.expanduser(path)}"
    )


@pytest.mark.parametrize(
    "tool, option, given, path",
    [
        ("generate", "--results-path", "--results-path=~/x", "~/x"),
        ("generate", "--path", "--path=CHECKPOINT:~/x.pt", "~/x.pt"),
        ("generate", "the data folder", "~/x/data-bin", "~/x/data-bin"),
        ("interactive", "--input", "--input=~/x.txt", "~/x.txt"),
    ],
)
def test_a_translation_path_that_starts_with_a_tilde_the_shell_left_is_refused_before_it_is_read(
    conversions, checkpoints, monkeypatch, tmp_path, tool, option, given, path
):
    """fairseq-generate --results-path=~/x (bash expands '~' at the start of a word only) wrote its
    translations into a folder named '~' in the current folder, made without a word."""
    checkpoint = checkpoints["rnnsearch_50"]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as refused:
        conversions[tool](parsed(tool, checkpoint, given.replace("CHECKPOINT", str(checkpoint))))
    assert str(refused.value) == unexpanded_home_line(option, path)


def test_an_input_file_that_is_not_there_is_refused_before_fairseq_interactive_loads_a_model(
    conversions, checkpoints, tmp_path
):
    """fairseq-interactive opened it once the model was loaded, and ended in a traceback."""
    arguments = ["--input", str(tmp_path / "in.txt")]
    with pytest.raises(MissingPathError) as refused:
        conversions["interactive"](parsed("interactive", checkpoints["rnnsearch_50"], *arguments))
    assert str(refused.value).startswith(f"--input {tmp_path / 'in.txt'} not found (not a file)")


def test_for_other_models_the_translation_tools_paths_are_fairseq_s_to_read(
    conversions, monkeypatch, tmp_path
):
    """A checkpoint of fairseq's lstm (its saved configuration alone is read before loading)."""
    torch.save({"cfg": {"model": {"_name": "lstm"}}}, tmp_path / "lstm.pt")
    monkeypatch.chdir(tmp_path)
    conversions["generate"](parsed("generate", tmp_path / "lstm.pt", "--results-path=~/x"))
    conversions["interactive"](parsed("interactive", tmp_path / "lstm.pt", "--input", "in.txt"))


def _started_processes(arch):
    """What fairseq's call_main, wrapped as importing the plugin wraps it where fairseq-train
    runs, is handed for a run of arch whose --distributed-rank is outside the world."""
    started = []
    call_main = fairseq_patches._refusing_ranks_outside_the_world(
        lambda cfg, main: started.append(cfg)
    )
    distributed = {
        "distributed_world_size": 2,
        "distributed_rank": 2,
        "distributed_no_spawn": True,
        "distributed_init_method": "tcp://127.0.0.1:1",
    }
    call_main(OmegaConf.create({"model": {"_name": arch}, "distributed_training": distributed}), 0)
    return started


def test_a_rank_outside_the_world_of_these_models_is_refused_before_fairseq_starts_processes():
    with pytest.raises(ConfigurationError, match="--distributed-rank 2 is outside"):
        _started_processes("rnnsearch_50")


def test_for_other_models_fairseq_starts_the_processes_as_given():
    assert len(_started_processes("lstm")) == 1


@pytest.fixture
def add_defaults_restored(monkeypatch):
    """fairseq's add_defaults wrapped as importing the plugin wraps it, restored after the test."""
    from fairseq_cli import hydra_train, train

    for module in (initialize, train, hydra_train):
        monkeypatch.setattr(module, "add_defaults", module.add_defaults)
    fairseq_patches.read_the_options_as_given()


def model_options_completed(model):
    """The model's options of a configuration as hydra composed it (model, its keys as written),
    once fairseq has filled in its defaults and applied the architecture as it builds the model."""
    cfg = OmegaConf.create({"model": model})
    initialize.add_defaults(cfg)
    ARCH_CONFIG_REGISTRY[cfg.model._name](cfg.model)
    return cfg.model


def test_a_null_length_limit_given_to_a_named_architecture_outlives_fairseq_s_defaults(
    add_defaults_restored,
):
    model = model_options_completed({"_name": "rnnsearch_50", "max_train_length": None})
    assert model.max_train_length is None


@pytest.mark.parametrize(
    "model", [{"_name": "rnnsearch_50"}, "rnnsearch_50"], ids=["left-out", "named-alone"]
)
def test_a_length_limit_not_given_to_a_named_architecture_is_still_its_own(
    add_defaults_restored, model
):
    assert model_options_completed(model).max_train_length == 50


ADADELTA_MISSPELT = {"_name": "adadelta", "adadelta_rhoo": 0.9, "lr": [1.0]}


def test_a_key_the_optimizer_of_these_models_does_not_take_is_refused_before_fairseq_s_defaults(
    add_defaults_restored,
):
    """fairseq's legacy adadelta would never read it (models/unknown_options.py)."""
    cfg = OmegaConf.create({"model": {"_name": "rnnsearch_50"}, "optimizer": ADADELTA_MISSPELT})
    with pytest.raises(ConfigurationError, match="^optimizer.adadelta_rhoo is not an option"):
        initialize.add_defaults(cfg)


@pytest.mark.parametrize(
    "blocks, refused",
    [
        (
            {"checkpoint": {"patience": 2}, "dataset": {"disable_validation": True}},
            "--patience 2 with --disable-validation",
        ),
        (
            {"dataset": {"train_subset": "valid", "valid_subset": "valid"}},
            "--train-subset valid is validated too",
        ),
        ({"task": {"upsample_primary": 0}}, "--upsample-primary 0 repeats"),
        (
            {
                "lr_scheduler": {"_name": "reduce_lr_on_plateau"},
                "dataset": {"disable_validation": True},
            },
            "--lr-scheduler reduce_lr_on_plateau with --disable-validation",
        ),
        ({"optimization": {"lr": [0.01, -0.001]}}, "--lr 0.01,-0.001: a negative learning rate"),
        (
            {"optimizer": {"_name": "adam", "adam_betas": "(1.5, 0.999)"}},
            "--adam-betas (1.5, 0.999): Adam takes two decay rates",
        ),
        (
            {"lr_scheduler": {"_name": "fixed", "lr_shrink": 0.5, "force_anneal": None}},
            "--lr-shrink 0.5 does nothing under --lr-scheduler fixed without --force-anneal",
        ),
    ],
    ids=[
        "patience-without-validation",
        "training-on-a-validated-split",
        "no-first-shard",
        "plateau-without-validation",
        "negative-learning-rate",
        "adam-betas",
        "lr-shrink-never-applied",
    ],
)
def test_the_training_options_of_these_models_are_checked_before_fairseq_s_defaults(
    add_defaults_restored, blocks, refused
):
    """models/training_setup.py's checks of options that fairseq never checks."""
    cfg = OmegaConf.create({"model": {"_name": "rnnsearch_50"}, **blocks})
    with pytest.raises(ConfigurationError, match=f"^{re.escape(refused)}"):
        initialize.add_defaults(cfg)


def test_the_options_of_a_legacy_task_pass_the_checks_before_fairseq_s_defaults(
    add_defaults_restored, data_bin
):
    """fairseq keeps translation_multi_simple_epoch's options in the argparse Namespace they were
    read into, which has no .get: the checks failed in an AttributeError traceback, where fairseq's
    lstm trained."""
    from fairseq import options

    args = options.parse_args_and_arch(
        options.get_training_parser(),
        [
            *(str(data_bin), "--user-dir", str(PLUGIN), "--arch", "rnnsearch_50"),
            *("--task", "translation_multi_simple_epoch", "--lang-pairs", "en-fr"),
        ],
    )
    initialize.add_defaults(convert_namespace_to_omegaconf(args))


def test_for_other_models_the_optimizer_s_keys_are_fairseq_s_to_read(add_defaults_restored):
    cfg = OmegaConf.create({"model": {"_name": "lstm"}, "optimizer": ADADELTA_MISSPELT})
    initialize.add_defaults(cfg)
    assert cfg.optimizer.adadelta_rhoo == 0.9


def test_for_other_models_fairseq_s_defaults_are_fairseq_s_own(add_defaults_restored):
    model = {"_name": "transformer_iwslt_de_en", "encoder_layers": 2}
    ours, fairseqs = (OmegaConf.create({"model": model}) for _ in range(2))
    initialize.add_defaults(ours)
    initialize.add_defaults.__wrapped__(fairseqs)
    assert OmegaConf.to_container(ours) == OmegaConf.to_container(fairseqs)


# fairseq-train's options as its configuration holds them, and the option and path refused
TRAINING_PATHS_GIVEN = {
    "--save-dir ~/x": {"checkpoint": {"save_dir": "~/x"}},
    "--restore-file ~/x/checkpoint_last.pt": {
        "checkpoint": {"restore_file": "~/x/checkpoint_last.pt"}
    },
    "--finetune-from-model ~/x.pt": {"checkpoint": {"finetune_from_model": "~/x.pt"}},
    "the data folder ~/x/data-bin": {"task": {"data": "data-bin:~/x/data-bin"}},
    "--tensorboard-logdir ~/x/logs": {"common": {"tensorboard_logdir": "~/x/logs"}},
    "--log-file ~/x/train.log": {"common": {"log_file": "~/x/train.log"}},
}


@pytest.mark.parametrize("refused_path", TRAINING_PATHS_GIVEN)
def test_a_training_path_that_starts_with_a_tilde_the_shell_left_is_refused_before_fairseq_makes_it(
    add_defaults_restored, monkeypatch, tmp_path, refused_path
):
    """fairseq-train --save-dir=~/x (bash expands '~' at the start of a word only) trained into a
    folder named '~' in the current folder, made without a word."""
    monkeypatch.chdir(tmp_path)
    cfg = OmegaConf.create(
        {"model": {"_name": "rnnsearch_50"}, **TRAINING_PATHS_GIVEN[refused_path]}
    )
    with pytest.raises(ConfigurationError) as refused:
        initialize.add_defaults(cfg)
    assert str(refused.value) == unexpanded_home_line(*refused_path.rsplit(" ", 1))


def test_a_save_dir_in_a_tilde_folder_that_is_there_is_taken(
    add_defaults_restored, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "~").mkdir()
    cfg = OmegaConf.create({"model": {"_name": "rnnsearch_50"}, "checkpoint": {"save_dir": "~/x"}})
    initialize.add_defaults(cfg)
    assert cfg.checkpoint.save_dir == "~/x"


def _reads_the_resumed_checkpoint_in_every_process(arch: str, world_size: int) -> bool:
    """fairseq-train's options for a run of world_size processes, its defaults filled in."""
    cfg = OmegaConf.create(
        {
            "model": {"_name": arch},
            "distributed_training": {"distributed_world_size": world_size},
            "checkpoint": {"load_checkpoint_on_all_dp_ranks": False},
        }
    )
    initialize.add_defaults(cfg)
    return cfg.checkpoint.load_checkpoint_on_all_dp_ranks


def test_every_process_of_a_distributed_run_of_these_models_reads_the_checkpoint_it_resumes(
    add_defaults_restored,
):
    """fairseq's rank 0 sends it to the others, whose weights-only loading refused it."""
    assert _reads_the_resumed_checkpoint_in_every_process("rnnsearch_50", 2)


def test_one_process_reads_the_checkpoint_it_resumes_as_fairseq_does(add_defaults_restored):
    assert not _reads_the_resumed_checkpoint_in_every_process("rnnsearch_50", 1)


def test_for_other_models_fairseq_s_rank_0_reads_the_checkpoint_it_resumes(add_defaults_restored):
    assert not _reads_the_resumed_checkpoint_in_every_process("lstm", 2)


def test_importing_the_plugin_again_wraps_fairseq_s_defaults_once(add_defaults_restored):
    from fairseq_cli import hydra_train, train

    wrapped = [module.add_defaults for module in (initialize, train, hydra_train)]
    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    assert [module.add_defaults for module in (initialize, train, hydra_train)] == wrapped


@pytest.fixture
def translation_task_restored(monkeypatch):
    monkeypatch.setattr(TranslationTask, "setup_task", TranslationTask.__dict__["setup_task"])


def test_where_a_fairseq_tool_runs_the_translation_task_records_the_languages_given(
    translation_task_restored, data_bin, monkeypatch
):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/fairseq-generate"])
    fairseq_patches.remember_the_languages_given()
    task = TranslationTask.setup_task(TranslationConfig(data=str(data_bin), source_lang="fr"))
    assert getattr(task, LANGUAGES_GIVEN) == ("fr", None)
    assert (task.cfg.source_lang, task.cfg.target_lang) == ("en", "fr")  # fairseq's inference


def test_importing_the_plugin_again_wraps_the_translation_task_s_setup_once(
    translation_task_restored, monkeypatch
):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/fairseq-train"])
    fairseq_patches.remember_the_languages_given()
    wrapped = TranslationTask.__dict__["setup_task"]
    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    assert TranslationTask.__dict__["setup_task"] is wrapped


@pytest.fixture
def in_fairseq_train(monkeypatch):
    """This process as fairseq-train, its checkpoint functions restored after the test."""
    monkeypatch.setattr(sys, "argv", ["/venv/bin/fairseq-train"])
    for name in ("load_checkpoint", "save_checkpoint"):
        monkeypatch.setattr(checkpoint_utils, name, getattr(checkpoint_utils, name))


def test_importing_the_plugin_again_wraps_fairseq_train_s_checkpoint_functions_once(
    in_fairseq_train,
):
    fairseq_patches.own_the_save_dir_in_training()
    wrapped = checkpoint_utils.load_checkpoint, checkpoint_utils.save_checkpoint
    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    assert (checkpoint_utils.load_checkpoint, checkpoint_utils.save_checkpoint) == wrapped


def test_for_other_models_fairseq_train_resumes_and_saves_with_fairseq_s_own_functions(
    in_fairseq_train, tmp_path
):
    """Without a hold on --save-dir, a room check, or whole writes."""
    calls = []
    checkpoint_utils.load_checkpoint = lambda cfg, trainer: calls.append(("load", cfg.save_dir))
    checkpoint_utils.save_checkpoint = lambda cfg, trainer, epoch_itr, val_loss: calls.append(
        ("save", checkpoint_utils.torch_persistent_save)
    )
    fairseq_patches.own_the_save_dir_in_training()
    trainer = types.SimpleNamespace(get_model=lambda: torch.nn.Linear(2, 2))
    cfg = types.SimpleNamespace(save_dir=str(tmp_path), no_save=False)
    checkpoint_utils.load_checkpoint(cfg, trainer)
    checkpoint_utils.save_checkpoint(cfg, trainer, None, None)
    assert calls == [("load", str(tmp_path)), ("save", FAIRSEQS_SAVE)]
    assert os.listdir(tmp_path) == []


def test_fairseq_train_validates_every_sentence_of_a_split_not_a_multiple_of_8(data_bin, tmp_path):
    """The demo's 13 test sentences as the validation split, in one batch of 80 sentences at most:
    fairseq 0.12's batching under --required-batch-size-multiple 8 validated 8 of them."""
    log = run(
        "fairseq-train",
        *train_command(data_bin, tmp_path / "save", "rnnsearch_50", "--max-update", "1"),
        *("--valid-subset", "test", "--required-batch-size-multiple", "8", "--no-save"),
    )
    validation = next(line for line in log.splitlines() if "valid on 'test' subset" in line)
    assert f"bsz {TEST_SENTENCES} " in validation


def reading_as_interactive_does(input_file, models):
    """The lines fairseq-interactive's main, having loaded ``models``, reads from --input, read
    through the plugin's reading of fairseq's (fairseq's own given here: the lines it splits)."""
    read = fairseq_patches._reading_a_file_as_standard_input(
        lambda path, size: iter([open(path, encoding="utf-8").read().splitlines()])
    )
    lines = []
    for buffer in read(str(input_file), 100):  # as main reads it: a comprehension is a frame
        lines += buffer
    return lines


def test_for_other_models_fairseq_interactive_reads_its_input_file_as_fairseq_does(tmp_path):
    input_file = tmp_path / "input.en"
    input_file.write_bytes(b"the dog\rsees a cat\n")
    assert reading_as_interactive_does(input_file, [torch.nn.Linear(2, 2)]) == [
        "the dog",
        "sees a cat",
    ]


def test_match_source_len_translates_each_line_in_as_many_words_as_it_has(data_bin, checkpoints):
    """Lines of 2 to 15 words in one batch of fairseq-interactive: fairseq's search, counting the
    source's end of sentence, gave each a word more."""
    lines = ["the dog", "the book follows the small house", " ".join(["the blue cat sees"] * 4)]
    log = run(
        "fairseq-interactive", data_bin, "--user-dir", PLUGIN,
        "--path", checkpoints["rnnsearch_50"], "--source-lang", "en", "--target-lang", "fr",
        "--match-source-len", "--buffer-size", "3", "--batch-size", "3", "--cpu",
        stdin="\n".join(lines) + "\n",
    )  # fmt: skip
    translations = re.findall(r"^H-(\d+)\t\S+\t(.*)$", log, flags=re.M)
    assert sorted((int(line), len(words.split())) for line, words in translations) == [
        (index, len(line.split())) for index, line in enumerate(lines)
    ]


def test_for_other_models_match_source_len_keeps_fairseq_s_lengths():
    search = LengthConstrainedBeamSearch(
        Dictionary(), min_len_a=1, min_len_b=0, max_len_a=1, max_len_b=0
    )
    build = fairseq_patches._matching_the_source_length_in_words(
        lambda task, models, args: types.SimpleNamespace(search=search)
    )
    build(None, [torch.nn.Linear(2, 2)], None)
    assert (search.min_len_b, search.max_len_b) == (0, 0)


def test_training_batches_are_fairseqs_own_last_partial_batch_left_out_included(data_bin):
    with_plugin = training_batches(data_bin, "with-plugin")
    assert with_plugin == training_batches(data_bin, "without-plugin")
    assert {len(batch) for batch in with_plugin} == {7}
    assert sum(map(len, with_plugin)) == 2000 - 2000 % 7


def generated_sentences(data_bin, checkpoints, *python_args):
    """How many sentences fairseq-generate, run as python *python_args, translates of the 13 of the
    test set in batches of 4: 3 full batches and a last one of 1, not a multiple of 8."""
    completed = python(
        *python_args,
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoints["rnnencdec_30"],
        "--batch-size",
        "4",
        "--max-len-b",
        "5",
        "--cpu",
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return len(re.findall(r"^H-\d+\t", completed.stdout, flags=re.M))


def test_without_the_protection_fairseq_generate_leaves_out_the_last_partial_batch(
    data_bin, checkpoints
):
    """What the models' prepare_for_inference_ guards against; if fairseq fixes it, this says so."""
    translated = generated_sentences(data_bin, checkpoints, "-c", GENERATE_WITHOUT_THE_PROTECTION)
    assert translated == TEST_SENTENCES - TEST_SENTENCES % 4


def test_fairseq_generate_run_as_a_module_translates_every_test_sentence(data_bin, checkpoints):
    """python -m fairseq_cli.generate; test_cli runs the fairseq-generate command."""
    translated = generated_sentences(data_bin, checkpoints, "-m", "fairseq_cli.generate")
    assert translated == TEST_SENTENCES


def test_exiting_while_fairseqs_read_ahead_thread_is_in_torch_aborts():
    """What --data-buffer-size 0 avoids; if fairseq or torch fix it, this test says so."""
    completed = python("-c", EXIT_WHILE_FAIRSEQ_READS_BATCHES, 10)  # fairseq's default buffer
    assert completed.returncode == ABORTED
    assert "terminate called without an active exception" in completed.stderr


def test_without_a_read_ahead_buffer_exiting_mid_epoch_succeeds():
    completed = python("-c", EXIT_WHILE_FAIRSEQ_READS_BATCHES, 0)
    assert completed.returncode == 0, completed.stderr[-2000:]


# Many row counts through oneDNN's product (torch's own kernel, which a search compiled with the
# weights as constants calls), as sentence lengths and finished beams give; prints how much the
# peak resident memory grew, in MiB. The peak is this program's own (VmHWM): getrusage's ru_maxrss
# also counts the parent's before exec, as subprocess starts children with vfork.
MANY_ROW_COUNTS = """
import re
import bahdanau_plugin
import torch

def peak_mib():
    with open("/proc/self/status") as status:
        return int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1)) / 1024

def product(rows, weight):
    return torch.ops.mkldnn._linear_pointwise(rows, weight, None, "none", [], "")

weight = torch.randn(768, 256)
product(torch.randn(1, 256), weight)
before = peak_mib()
for rows in range(2, 600, 2):
    product(torch.randn(rows, 256), weight)
print(peak_mib() - before)
"""


def memory_growth_over_many_row_counts(cache_entries=None):
    sizes = fairseq_patches.ONEDNN_CACHE_SIZES
    env = {key: value for key, value in os.environ.items() if key not in sizes}
    if cache_entries is not None:
        env.update({variable: str(cache_entries) for variable in sizes})
    completed = python_program(MANY_ROW_COUNTS, env={**env, "OMP_NUM_THREADS": "1"}, timeout=120)
    return float(completed.stdout.split()[-1])


@pytest.mark.cpu_only
def test_the_plugin_bounds_onednn_s_kernel_caches():
    assert memory_growth_over_many_row_counts() < 40


@pytest.mark.cpu_only
def test_onednn_s_default_caches_grow_with_every_row_count():
    """What the bound above prevents (oneDNN's and ideep's defaults are 1024 entries each)."""
    assert memory_growth_over_many_row_counts(cache_entries=1024) > 60


def test_a_cache_size_the_user_chose_is_kept(monkeypatch):
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "256")
    fairseq_patches.limit_onednn_caches()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "256"
