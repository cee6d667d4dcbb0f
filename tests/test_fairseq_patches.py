"""What importing the plugin changes in fairseq and Python (bahdanau_plugin/fairseq_patches.py),
that it changes it once, and that fairseq-train's batches stay fairseq's own."""

import argparse
import importlib
import json
import re
import subprocess
import sys
import types

from fairseq import checkpoint_utils, hub_utils, utils
from fairseq.data import iterators
from fairseq.tasks import FairseqTask
from fairseq_cli import generate, interactive, train

import bahdanau_plugin
from bahdanau_plugin import fairseq_patches

from .helpers import PLUGIN, TEST_SENTENCES, fairseq_env

ABORTED = -6  # SIGABRT, as libstdc++'s std::terminate ends a process

# The functions of fairseq and Python that the plugin wraps, and how many wrappers each carries.
WRAPPED = [
    (sys, "excepthook", 1),
    (checkpoint_utils, "load_checkpoint_to_cpu", 1),
    (generate, "main", 2),
    (iterators.BackgroundConsumer, "run", 1),
    (utils, "load_align_dict", 1),
    (utils, "post_process_prediction", 1),
    (FairseqTask, "build_generator", 1),
    (interactive, "make_batches", 2),
    (interactive, "buffered_read", 1),
    (hub_utils.GeneratorHubInterface, "sample", 1),
    (train, "convert_namespace_to_omegaconf", 1),
]

# fairseq-train's batches of the training split in epoch 1 (sentences ordered by length, batches
# shuffled), asked as fairseq-train asks, with its defaults: --required-batch-size-multiple 8.
# Batches of 7 leave 2,000 % 7 = 5 sentences for a last batch, which that multiple leaves out.
TRAINING_BATCHES = """
import json, sys
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
if sys.argv[2] == "with-plugin":
    import bahdanau_plugin
parser = options.get_training_parser()
cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, [sys.argv[1], "--arch", "lstm",
                                                                          "--batch-size", "7", "--seed", "3"]))
task = tasks.setup_task(cfg.task)
task.load_dataset(cfg.dataset.train_subset)
iterator = task.get_batch_iterator(
    task.dataset(cfg.dataset.train_subset), max_sentences=cfg.dataset.batch_size, ignore_invalid_inputs=True,
    required_batch_size_multiple=cfg.dataset.required_batch_size_multiple, seed=cfg.common.seed, epoch=1)
print(json.dumps([batch["id"].tolist() for batch in iterator.next_epoch_itr(shuffle=True)]))
"""

# fairseq-generate with the plugin but without its wrappers of fairseq-generate's main.
GENERATE_WITHOUT_THE_PATCH = """
import inspect
import sys
import bahdanau_plugin
from fairseq_cli import generate
generate.main = inspect.unwrap(generate.main)
sys.argv[0] = "fairseq-generate"
generate.cli_main()
"""

# fairseq's BufferedIterator reads ahead in a daemon thread; each of these items takes a long
# GIL-free torch operation, so the thread is inside torch when the main thread exits.
EXIT_WHILE_READING_AHEAD = """
import sys
import torch
from fairseq.data import iterators
if sys.argv[1] == "with-plugin":
    import bahdanau_plugin
torch.set_num_threads(1)

class SlowItems:
    def __len__(self):
        return 1000

    def __iter__(self):
        matrix = torch.ones(1500, 1500)
        for _ in range(1000):
            yield (matrix @ matrix).sum().item()

next(iterators.BufferedIterator(1000, SlowItems()))
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


def test_importing_the_plugin_makes_exactly_these_changes():
    assert [change.__name__ for change in fairseq_patches.CHANGES] == [
        "limit_onednn_caches",
        "print_plugin_errors_as_one_line",
        "allow_fairseq_checkpoint_types",
        "explain_unreadable_checkpoints",
        "generate_every_test_sentence",
        "replace_unknown_words_from_attention",
        "tolerate_invalid_utf8_input",
        "skip_lines_over_max_source_positions_in_interactive",
        "drop_byte_order_mark_of_interactive_input",
        "stop_background_loading_at_exit",
        "train_in_bfloat16_on_gpus_and_cpus",
    ]


def _wrappers(function):
    """The chain of the plugin's wrappers around a function, outermost first."""
    chain = []
    while getattr(function, fairseq_patches.PATCH_MARK, None):
        chain.append(function)
        function = function.__wrapped__
    return chain


def test_importing_the_plugin_again_wraps_each_function_once():
    importlib.reload(bahdanau_plugin)
    utils.import_user_module(argparse.Namespace(user_dir=PLUGIN))
    for owner, name, wrappers in WRAPPED:
        chain = _wrappers(getattr(owner, name))
        assert len(chain) == wrappers == len(getattr(chain[0], fairseq_patches.PATCH_MARK)), name


def test_patch_wraps_an_attribute_once_with_each_wrapper_and_says_whether_it_did():
    owner = types.SimpleNamespace(double=lambda x: 2 * x)

    def plus_one(function):
        return lambda x: function(x) + 1

    def times_ten(function):
        return lambda x: function(x) * 10

    assert fairseq_patches.patch(owner, "double", plus_one)
    assert not fairseq_patches.patch(owner, "double", plus_one)
    assert fairseq_patches.patch(owner, "double", times_ten)
    assert not fairseq_patches.patch(owner, "double", plus_one)
    assert owner.double(5) == 110


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


def test_without_the_patch_fairseq_generate_leaves_out_the_last_partial_batch(
    data_bin, checkpoints
):
    """What the patch guards against; if fairseq fixes it, this test says so."""
    translated = generated_sentences(data_bin, checkpoints, "-c", GENERATE_WITHOUT_THE_PATCH)
    assert translated == TEST_SENTENCES - TEST_SENTENCES % 4


def test_fairseq_generate_run_as_a_module_translates_every_test_sentence(data_bin, checkpoints):
    """As bahdanau_tools/evaluation runs it; test_cli runs the fairseq-generate command."""
    translated = generated_sentences(data_bin, checkpoints, "-m", "fairseq_cli.generate")
    assert translated == TEST_SENTENCES


def test_without_the_plugin_exiting_while_fairseq_reads_ahead_aborts():
    """The failure the next test guards against; if fairseq or torch fix it, this test says so."""
    completed = python("-c", EXIT_WHILE_READING_AHEAD, "without-plugin")
    assert completed.returncode == ABORTED
    assert "terminate called without an active exception" in completed.stderr


def test_with_the_plugin_exiting_while_fairseq_reads_ahead_succeeds():
    completed = python("-c", EXIT_WHILE_READING_AHEAD, "with-plugin")
    assert completed.returncode == 0, completed.stderr[-2000:]
