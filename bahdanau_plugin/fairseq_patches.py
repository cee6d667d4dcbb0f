"""Every change that importing the plugin makes to fairseq and Python, and why: CHANGES below.

``apply_all`` makes them; bahdanau_plugin/__init__.py calls it. A function of fairseq or Python is
only ever replaced through ``patch``, which marks its wrapper with the names of the wrappers it
carries and leaves a function that already carries the same wrapper alone, so importing the plugin
again (``importlib.reload``, or fairseq's ``--user-dir`` after ``import bahdanau_plugin``) wraps
nothing twice; the other changes come out the same when repeated.

None of them changes what fairseq-train computes: its batches, losses and parameters are fairseq's
own. They make checkpoints load safely, the plugin's errors read as one line, fairseq-generate
translate every test sentence, --replace-unk work, fairseq-interactive survive bad input (invalid
UTF-8, a line over --max-source-positions, a byte-order mark) and a run stopped mid-epoch exit
cleanly.
"""

import argparse
import atexit
import functools
import importlib.util
import io
import sys
import threading

import torch
from fairseq import checkpoint_utils, hub_utils, utils
from fairseq.data import iterators
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.tasks import FairseqTask
from fairseq_cli import generate

from . import unknown_words
from .checkpoint_safety import FAIRSEQ_CHECKPOINT_TYPES, explaining_errors
from .cpu_fast_path import limit_onednn_caches
from .errors import printing_plugin_errors_as_one_line
from .models.common import RecurrentTranslationModel

# Set on every wrapper that ``patch`` installs: the names of the wrappers it carries, its own included.
PATCH_MARK = "__bahdanau_plugin_patch__"

# How long the interpreter's exit waits for a background loader to finish the batch it is reading.
LOADER_EXIT_TIMEOUT_S = 10


def patch(owner, name: str, make_wrapper) -> bool:
    """Replace ``owner.name`` by ``make_wrapper(owner.name)``, marked with PATCH_MARK, unless it
    already carries that wrapper; whether it did."""
    original = getattr(owner, name)
    carried = getattr(original, PATCH_MARK, frozenset())
    if make_wrapper.__name__ in carried:
        return False
    wrapper = functools.update_wrapper(make_wrapper(original), original)
    setattr(wrapper, PATCH_MARK, carried | {make_wrapper.__name__})
    setattr(owner, name, wrapper)
    return True


def print_plugin_errors_as_one_line() -> None:
    """fairseq's tools let exceptions escape to the interpreter, which prints a traceback; for the
    plugin's own errors the one line is all a user needs (libraries still get the exception)."""
    patch(sys, "excepthook", printing_plugin_errors_as_one_line)


def allow_fairseq_checkpoint_types() -> None:
    """torch >= 2.6 loads with weights_only=True, which refuses the argparse.Namespace that fairseq
    checkpoints hold; allow-listing that one type keeps safe loading on (checkpoint_safety.py)."""
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is not None:  # torch < 2.4 has no weights-only default to satisfy
        add_safe_globals(list(FAIRSEQ_CHECKPOINT_TYPES))


def explain_unreadable_checkpoints() -> None:
    """A truncated checkpoint, or one whose pickle would run code, ends the command with one line
    that names the file and says what to do, instead of torch's internals."""
    patch(checkpoint_utils, "load_checkpoint_to_cpu", explaining_errors)


def _as_config(cfg):
    """fairseq-generate's main takes its configuration or the argparse namespace it converts."""
    return convert_namespace_to_omegaconf(cfg) if isinstance(cfg, argparse.Namespace) else cfg


def _batching_every_sentence(main):
    def wrapper(cfg):
        cfg = _as_config(cfg)
        cfg.dataset.required_batch_size_multiple = 1
        return main(cfg)

    return wrapper


def _loaded_copies(module_name: str):
    """The module of that name where it is loaded, and __main__ too when that is the module run as
    ``python -m module_name``: its cli_main then calls the functions of __main__, a copy."""
    main_module = sys.modules["__main__"]
    copies = [sys.modules[module_name]] if module_name in sys.modules else []
    if getattr(getattr(main_module, "__spec__", None), "name", None) == module_name:
        copies.append(main_module)
    return copies


def _fairseq_generate_modules():
    """fairseq_cli.generate, and its __main__ copy when fairseq-generate runs as
    ``python -m fairseq_cli.generate`` (as bahdanau_tools/evaluation does)."""
    return _loaded_copies(generate.__name__)


def generate_every_test_sentence() -> None:
    """fairseq's batch_by_size leaves out the last batch when its size is not a multiple of
    --required-batch-size-multiple (8 by default; fairseq issue #5036), so fairseq-generate
    translates up to 7 test sentences fewer than the test set holds, without a word, and BLEU misses
    them. fairseq-generate alone batches with a multiple of 1 (fairseq's own option, which it may
    be given by hand; the plugin overrides whatever it says), as fairseq-interactive and the hub
    interface always do: the batches' sizes are all that changes, not a translation.
    fairseq-train's batches, validation included, stay fairseq's own."""
    for module in _fairseq_generate_modules():
        patch(module, "main", _batching_every_sentence)


def _checked_word_dictionary(load_align_dict):
    def wrapper(replace_unk):
        return unknown_words.load_word_dictionary(replace_unk)

    return wrapper


def _replacing_unknown_words(build_generator):
    def wrapper(task, models, args, *more, **options):
        return unknown_words.replacing_generator(
            task, build_generator(task, models, args, *more, **options), args
        )

    return wrapper


def _using_replaced_words(post_process_prediction):
    def wrapper(
        hypo_tokens,
        src_str,
        alignment,
        align_dict,
        tgt_dict,
        remove_bpe=None,
        extra_symbols_to_ignore=None,
    ):
        if isinstance(alignment, unknown_words.ReplacedAlignment):
            return alignment.post_processed(tgt_dict, remove_bpe)
        return post_process_prediction(
            hypo_tokens,
            src_str,
            alignment,
            align_dict,
            tgt_dict,
            remove_bpe,
            extra_symbols_to_ignore,
        )

    return wrapper


def _taking_over_replace_unk(main):
    def wrapper(cfg):
        cfg = _as_config(cfg)
        unknown_words.take_over(cfg)
        return main(cfg)

    return wrapper


def _keeping_input_words(make_batches):
    def wrapper(lines, cfg, task, max_positions, encode_fn):
        if unknown_words.requested(cfg.generation):
            unknown_words.learn_input_words(
                task.source_dictionary, [encode_fn(line) for line in lines]
            )
        return make_batches(lines, cfg, task, max_positions, encode_fn)

    return wrapper


def replace_unknown_words_from_attention() -> None:
    """fairseq 0.12 has --replace-unk (and the hub's replace_unk=), but nothing that replaces
    <unk> from this plugin's attention with real source words: fairseq-generate only allows it on
    raw text, its replacement reads the source word of an alignment given as (source, target) pairs
    as if it were one number (fairseq issue #3533), fairseq-interactive rebuilds its source text
    with <unk> in place of the words (#1033), --replace-unk without a file opens a file named "@@ ",
    and the hub loads the dictionary but never replaces. unknown_words.py replaces instead:

    - utils.load_align_dict: the dictionary file, checked line by line (one-line errors);
    - FairseqTask.build_generator: with --replace-unk, the generator replaces every <unk> after
      beam search, from each hypothesis' attention and the real source words;
    - utils.post_process_prediction: the text of a hypothesis is then its replaced symbols;
    - fairseq_cli.generate.main: --replace-unk goes past fairseq's raw-text check to that generator,
      which reads the source words from the text beside the binaries;
    - fairseq_cli.interactive.make_batches: with --replace-unk, the input's words outside the
      source dictionary keep ids of their own, which the models read as <unk>;
    - GeneratorHubInterface.sample (translate): replaces with the words of the sentences it is given.
    """
    patch(utils, "load_align_dict", _checked_word_dictionary)
    patch(FairseqTask, "build_generator", _replacing_unknown_words)
    patch(utils, "post_process_prediction", _using_replaced_words)
    for module in _fairseq_generate_modules():
        patch(module, "main", _taking_over_replace_unk)
    for module in _loaded_copies(INTERACTIVE):
        patch(module, "make_batches", _keeping_input_words)
    patch(hub_utils.GeneratorHubInterface, "sample", unknown_words.replacing_hub_sample)


def tolerate_invalid_utf8_input() -> None:
    """fairseq-interactive reads sys.stdin; under a strict UTF-8 decoder (PYTHONIOENCODING=utf-8,
    say) one line of invalid bytes ends the whole session. Undecodable bytes become U+FFFD instead,
    which the dictionary maps to <unk>, and the line is translated like any other."""
    if isinstance(sys.stdin, io.TextIOWrapper) and sys.stdin.errors == "strict":
        sys.stdin.reconfigure(errors="replace")


# fairseq-interactive's module configures the root logger when imported (logging.basicConfig), so
# the plugin patches it only where fairseq-interactive has loaded it, never imports it itself.
INTERACTIVE = "fairseq_cli.interactive"
BYTE_ORDER_MARK = "\ufeff"


def _source_limit(max_positions):
    """fairseq's max_positions: (source, target) for translation, one number for other tasks."""
    return max_positions[0] if isinstance(max_positions, tuple) else max_positions


def _reporting_lines_over_the_limit(make_batches):
    lines_before = 0  # of the earlier buffers: the ids fairseq-interactive prints go on from there

    def wrapper(lines, cfg, task, max_positions, encode_fn):
        nonlocal lines_before
        first_id, lines_before = lines_before, lines_before + len(lines)
        cfg.dataset.skip_invalid_size_inputs_valid_test = True
        translated = set()
        for batch in make_batches(lines, cfg, task, max_positions, encode_fn):
            translated.update(batch.ids.tolist())
            yield batch
        for index in sorted(set(range(len(lines))) - translated):
            _, (length,) = task.get_interactive_tokens_and_lengths([lines[index]], encode_fn)
            print(
                f"warning: sentence {first_id + index} is not translated: its {length:,} tokens (end of "
                f"sentence included) are over --max-source-positions {_source_limit(max_positions)}; "
                "raise that option to translate it",
                file=sys.stderr,
                flush=True,
            )

    return wrapper


def skip_lines_over_max_source_positions_in_interactive() -> None:
    """A line longer than --max-source-positions (1,024 tokens by default, a limit of fairseq's
    translation task: RNNsearch and RNNencdec have none) makes fairseq-interactive raise "Size of
    sample #N is invalid", which ends the session and loses every line after it. Such a line is now
    left out with a one-line warning that names the option, and the next lines are translated."""
    for module in _loaded_copies(INTERACTIVE):
        patch(module, "make_batches", _reporting_lines_over_the_limit)


def _without_byte_order_mark(buffered_read):
    def wrapper(input, buffer_size):
        buffers = buffered_read(input, buffer_size)
        first = next(buffers, None)
        if first is None:
            return
        first[0] = first[0].lstrip(BYTE_ORDER_MARK).lstrip()
        yield first
        yield from buffers

    return wrapper


def drop_byte_order_mark_of_interactive_input() -> None:
    """fairseq-interactive reads its input as UTF-8, which keeps a byte-order mark (Windows editors
    write one) as a character glued to the first word: that word becomes <unk>. The mark at the
    start of the input is dropped; the rest of the line is fairseq's own."""
    for module in _loaded_copies(INTERACTIVE):
        patch(module, "buffered_read", _without_byte_order_mark)


class _ExitGate:
    """A region (``with gate:``) that threads may enter until the interpreter starts exiting;
    closing waits for the threads inside to leave, and threads that come later wait for good."""

    def __init__(self):
        self._condition = threading.Condition()
        self._closed = False
        self._inside = 0

    def __enter__(self) -> None:
        with self._condition:
            self._condition.wait_for(lambda: not self._closed)
            self._inside += 1

    def __exit__(self, *exception) -> None:
        with self._condition:
            self._inside -= 1
            self._condition.notify_all()

    def close(self, timeout: float) -> None:
        with self._condition:
            self._closed = True
            self._condition.wait_for(lambda: self._inside == 0, timeout)


_LOADING = _ExitGate()
_END = object()


def _items_until_exit(source):
    """source's items, each read inside the gate."""
    with _LOADING:
        iterator = iter(source)
    while True:
        with _LOADING:
            item = next(iterator, _END)
        if item is _END:
            return
        yield item


def _reading_until_exit(run):
    def wrapper(consumer):
        consumer._source = _items_until_exit(consumer._source)
        run(consumer)

    return wrapper


def stop_background_loading_at_exit() -> None:
    """fairseq reads batches ahead in a daemon thread (``BackgroundConsumer``) that is still running
    when training stops before the end of an epoch (--max-update). If the interpreter exits while
    that thread is inside one of torch's operations, the thread is ended on its way back and
    libstdc++ aborts the whole process ("terminate called without an active exception", exit code
    134) after the checkpoints are saved. At exit, the thread now finishes the batch it is reading
    and then waits, outside torch, until the process ends; the batches are fairseq's own."""
    if patch(iterators.BackgroundConsumer, "run", _reading_until_exit):
        atexit.register(_LOADING.close, LOADER_EXIT_TIMEOUT_S)


# fairseq-train's module: the plugin is imported while it parses its arguments.
TRAIN = "fairseq_cli.train"


def _training_in_bfloat16_here(convert_namespace_to_omegaconf):
    def wrapper(args):
        if _bfloat16_taken_for_tpu(args):
            args.tpu = False
        return convert_namespace_to_omegaconf(args)

    return wrapper


def _bfloat16_taken_for_tpu(args) -> bool:
    """Whether fairseq turned --bf16 into --tpu for one of this plugin's architectures, on a
    machine that has no TPU support and where the user did not ask for --tpu."""
    model = ARCH_MODEL_REGISTRY.get(getattr(args, "arch", None))
    return (
        model is not None
        and issubclass(model, RecurrentTranslationModel)
        and getattr(args, "bf16", False)
        and getattr(args, "tpu", False)
        and "--tpu" not in sys.argv[1:]
        and importlib.util.find_spec("torch_xla") is None
    )


def train_in_bfloat16_on_gpus_and_cpus() -> None:
    """fairseq 0.12's argument parsing turns --bf16 into --tpu (options.parse_args_and_arch), so
    fairseq-train --bf16 fails without torch_xla on every GPU and CPU, although its trainer
    trains in bfloat16 on any device once --tpu is off (fairseq-hydra-train, which parses no
    arguments, shows it: common.bf16=true). No option or hook turns it off between the parsing and
    the training: fairseq-train imports the plugin in the middle of that parsing and converts its
    result right after. So for this plugin's architectures, where torch_xla is not installed and
    --tpu was not given, fairseq-train's conversion of its parsed arguments
    (fairseq_cli.train.convert_namespace_to_omegaconf) first turns --tpu off again; for any other
    model it returns fairseq's own result."""
    for module in _loaded_copies(TRAIN):
        patch(module, "convert_namespace_to_omegaconf", _training_in_bfloat16_here)


CHANGES = (
    # os.environ: ONEDNN_PRIMITIVE_CACHE_CAPACITY=16 and LRU_CACHE_CAPACITY=1 unless set; torch's
    # defaults (1,024 kernels each) cost up to 280 MiB for no speed (cpu_fast_path/onednn_linear.py).
    limit_onednn_caches,
    print_plugin_errors_as_one_line,  # sys.excepthook
    allow_fairseq_checkpoint_types,  # torch.serialization.add_safe_globals([argparse.Namespace])
    explain_unreadable_checkpoints,  # fairseq.checkpoint_utils.load_checkpoint_to_cpu
    generate_every_test_sentence,  # fairseq_cli.generate.main
    # fairseq.utils.load_align_dict and post_process_prediction, FairseqTask.build_generator,
    # fairseq_cli.generate.main, fairseq_cli.interactive.make_batches, GeneratorHubInterface.sample
    replace_unknown_words_from_attention,
    tolerate_invalid_utf8_input,  # sys.stdin's error handler
    skip_lines_over_max_source_positions_in_interactive,  # fairseq_cli.interactive.make_batches
    drop_byte_order_mark_of_interactive_input,  # fairseq_cli.interactive.buffered_read
    stop_background_loading_at_exit,  # fairseq.data.iterators.BackgroundConsumer.run, atexit
    train_in_bfloat16_on_gpus_and_cpus,  # fairseq_cli.train.convert_namespace_to_omegaconf
)


def apply_all() -> None:
    for change in CHANGES:
        change()
