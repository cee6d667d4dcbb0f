"""What fairseq's translating tools are made to do differently for these models, in one place.

fairseq-generate, fairseq-interactive and the hub call the model's ``prepare_for_inference_``
before they translate; it applies ``apply`` to the run's configuration. fairseq-train never calls
it, so training is fairseq's own. fairseq-validate calls no method of the models after loading
them: ``prepare_for_validation`` runs as they load.
"""

import functools
import logging
from typing import Iterable, Optional

import torch

from ..errors import ConfigurationError
from ..running_program import running_fairseq_tool
from ..tasks.translation_with_source_words import NAME as SOURCE_WORDS_TASK

logger = logging.getLogger(__name__)


def apply(cfg, has_attention: bool, target_symbols: int) -> None:
    refuse_fairseqs_own_unk_replacement(cfg)
    if not has_attention:
        refuse_alignment(cfg)
    refuse_what_fairseqs_search_cannot_do(cfg.generation)
    refuse_more_hypotheses_than_the_search_keeps(cfg.generation, target_symbols)
    refuse_constraints_where_none_are_read(cfg.generation)
    refuse_a_language_model_nothing_reads(cfg.generation)
    refuse_a_prefix_nothing_reads(cfg.generation)
    refuse_a_soft_alignment_fairseq_interactive_cannot_print(cfg.generation)
    batch_every_sentence(cfg)


# The tools whose configuration is the command's own; the hub's is the checkpoint's, whose --bf16
# was its training's (the hub translates in the precision its models are given: hub.bfloat16()).
TRANSLATING_TOOLS = ("fairseq-generate", "fairseq-interactive")


def precision_asked(cfg) -> Optional[torch.dtype]:
    """The precision fairseq-generate or fairseq-interactive was asked to translate in where
    fairseq leaves the models as they are: bfloat16 for --bf16 (--memory-efficient-bf16 sets it
    too), which fairseq 0.12 reads for TPUs alone (it converts to float16 for --fp16, and nothing
    for --bf16), so these models translated in float32 without a word. None otherwise."""
    common = getattr(cfg, "common", None)
    if running_fairseq_tool() in TRANSLATING_TOOLS and getattr(common, "bf16", False):
        return torch.bfloat16
    return None


def prepare_for_validation(model: torch.nn.Module, task, overrides: Optional[dict]) -> None:
    """Where fairseq-validate loads the model, with the task it validates with and the options it
    was given (the overrides it loads the checkpoint with): its --bf16, and every sentence."""
    if running_fairseq_tool() != "fairseq-validate":
        return
    precision = validation_precision_asked(overrides)
    if precision is not None:
        model.to(precision)  # as fairseq-validate's model.half() for --fp16
    if task is not None:
        validate_every_sentence(task)


def validation_precision_asked(overrides: Optional[dict]) -> Optional[torch.dtype]:
    """bfloat16 where fairseq-validate was given --bf16 (or --memory-efficient-bf16): it converts
    the models for --fp16 alone, so these models computed the loss in float32 without a word."""
    given = overrides or {}
    return torch.bfloat16 if given.get("bf16") or given.get("memory_efficient_bf16") else None


def validate_every_sentence(task) -> None:
    """fairseq-validate batches a subset with --required-batch-size-multiple (8 by default) and
    leaves out a last batch smaller than it (fairseq issue #5036): up to 7 sentences, the longest,
    missing from the loss without a word (the demo's 13 test sentences validated as 8). The task
    these models are loaded with batches every sentence for it, as for fairseq-generate
    (batch_every_sentence) and fairseq-train's validation (fairseq_patches.py)."""
    get_batch_iterator = task.get_batch_iterator
    if getattr(get_batch_iterator, "batches_every_sentence", False):
        return

    @functools.wraps(get_batch_iterator)
    def batching_every_sentence(*args, **kwargs):
        return get_batch_iterator(*args, **{**kwargs, "required_batch_size_multiple": 1})

    batching_every_sentence.batches_every_sentence = True
    task.get_batch_iterator = batching_every_sentence


def refuse_fairseqs_own_unk_replacement(cfg) -> None:
    """fairseq's own --replace-unk misreads these models' alignment (fairseq issue #3533) and
    fairseq-interactive's source words (#1033); the plugin's task replaces instead."""
    if getattr(cfg.generation, "replace_unk", None) is not None:
        raise ConfigurationError(
            f"--replace-unk needs --task {SOURCE_WORDS_TASK}, which replaces unknown words from "
            "these models' attention: add that option (in Python, load the model with "
            "RNNsearchModel.from_pretrained)"
        )


def refuse_alignment(cfg) -> None:
    """A model without attention (rnnencdec) has no alignment to print: without this, fairseq's
    beam search fails on the missing attention with an IndexError."""
    if getattr(cfg.generation, "print_alignment", None):
        raise ConfigurationError(
            "--print-alignment needs attention, which rnnencdec does not have: drop the flag, "
            "or translate with rnnsearch checkpoints only"
        )


def refuse_what_fairseqs_search_cannot_do(generation) -> None:
    """Options with which fairseq 0.12's beam search, for any model, stops in a traceback (before
    it translates, or after the first batch, what it had translated lost with it), or gives less
    than it was asked."""
    searches = searches_asked(generation)
    if len(searches) > 1:
        constraints = " (only its plain beam search writes --constraints)"
        raise ConfigurationError(
            f"{' and '.join(searches)} each ask fairseq for a search of its own, and it runs "
            f"one{constraints if '--constraints' in searches else ''}: give one of them"
        )
    for option, value in (
        ("--sampling-topk", generation.sampling_topk),
        ("--sampling-topp", generation.sampling_topp),
    ):
        if value >= 0 and not generation.sampling:
            raise ConfigurationError(
                f"{option} {value:g} limits the words --sampling draws from, and --sampling is "
                "not given: add --sampling (with --nbest equal to --beam), or drop it"
            )
    if generation.temperature <= 0:
        raise ConfigurationError(
            f"--temperature {generation.temperature:g}: fairseq divides the models' scores by it "
            "before the softmax; give one over 0 (1, the default, leaves them as they are)"
        )
    if generation.nbest > generation.beam:
        raise ConfigurationError(
            f"--nbest {generation.nbest} is over --beam {generation.beam}: the search keeps "
            f"{generation.beam} hypotheses, and fairseq would print those alone: give --nbest at "
            "most --beam"
        )
    if generation.max_len_a == 0 and generation.max_len_b < generation.min_len:
        raise ConfigurationError(
            f"--max-len-a 0 --max-len-b {generation.max_len_b} leaves translations shorter than "
            f"--min-len {generation.min_len}: give a larger --max-len-b (or a --max-len-a)"
        )
    if generation.match_source_len and generation.min_len > 1:
        raise ConfigurationError(
            f"--min-len {generation.min_len} does nothing beside --match-source-len, which gives "
            "each translation as many words as its source, shorter ones included (fairseq fails "
            "at a batch whose sources are all shorter): drop --min-len, or --match-source-len"
        )
    if generation.diverse_beam_groups > 0:  # fairseq indexes its groups by the sentences' ids
        raise ConfigurationError(
            "--diverse-beam-groups fails in fairseq 0.12's search past its first sentences (an "
            "IndexError): drop it, or use --diversity-rate (diverse siblings search)"
        )
    if generation.retain_iter_history:
        raise ConfigurationError(
            "--retain-iter-history is for fairseq's iterative refinement models; these models' "
            "beam search keeps no history, and fairseq-generate fails after one sentence: drop it"
        )
    if generation.score_reference and generation.print_alignment == "soft":
        # fairseq's scorer extracts a hard alignment whatever the option, which fairseq-generate
        # then fails to print as rows of weights
        raise ConfigurationError(
            "--print-alignment soft with --score-reference: fairseq scores the references with "
            "hard alignments only, and fairseq-generate fails after one sentence: give "
            "--print-alignment hard, or drop --score-reference for the soft alignments of "
            "translations"
        )
    if generation.print_step:  # fairseq-generate prints hypo["steps"], which only they record
        raise ConfigurationError(
            "--print-step prints the steps of fairseq's iterative refinement models; these models' "
            "beam search records none, and fairseq-generate fails after one sentence: drop it"
        )


def refuse_more_hypotheses_than_the_search_keeps(generation, target_symbols: int) -> None:
    """fairseq's search keeps at most one hypothesis per target symbol but padding
    (``SequenceGenerator``: ``min(beam_size, vocab_size - 1)``): with a --beam over that, it
    printed that many of --nbest hypotheses (and sampled that many with --sampling) without a word,
    its log still saying the --beam given."""
    kept = min(generation.beam, target_symbols - 1)
    if generation.nbest > kept:
        raise ConfigurationError(
            f"--nbest {generation.nbest} is over the {kept} hypotheses fairseq's search keeps "
            f"with a target dictionary of {target_symbols} symbols (one per symbol but padding, "
            f"whatever --beam {generation.beam} says), and it would print those alone: give "
            f"--nbest at most {kept}"
        )


def searches_asked(generation) -> list:
    """The options given that each choose fairseq's search (fairseq's build_generator, whose
    check of them leaves --constraints out, which only its plain beam search writes);
    --diverse-beam-groups, refused above, is one more."""
    asked = {
        "--sampling": generation.sampling,
        "--match-source-len": generation.match_source_len,
        f"--diversity-rate {generation.diversity_rate:g}": generation.diversity_rate > -1,
        "--constraints": generation.constraints is not None,
    }
    return [option for option, given in asked.items() if given]


def refuse_constraints_where_none_are_read(generation) -> None:
    """fairseq-interactive reads --constraints from each line of its input; fairseq-generate's
    test sets hold none (fairseq's translation datasets have no constraints), so it translates
    without any, the option silently dropped."""
    if generation.constraints and running_fairseq_tool() == "fairseq-generate":
        raise ConfigurationError(
            "--constraints is read by fairseq-interactive, after a tab on each input line; "
            "fairseq-generate's test set holds none, and it would translate without them: drop "
            "the option, or translate with fairseq-interactive"
        )


def refuse_a_language_model_nothing_reads(generation) -> None:
    """fairseq-generate alone adds a language model's scores to the translation models' (shallow
    fusion: --lm-path, weighed by --lm-weight); it checks neither option. fairseq-interactive and
    the hub never read them, fairseq-generate's --score-reference scores the references with the
    translation models alone, and --lm-weight is 0 unless given: in each case the translations
    and scores were those without the language model, without a word (and --lm-weight without
    --lm-path weighs nothing)."""
    path, weight = generation.lm_path, generation.lm_weight
    if path is None:
        if weight:
            raise ConfigurationError(
                f"--lm-weight {weight:g} weighs the scores of the language model of --lm-path, "
                "which is not given: add --lm-path, or drop --lm-weight"
            )
        return
    tool = running_fairseq_tool()
    if tool != "fairseq-generate":
        raise ConfigurationError(
            f"--lm-path: fairseq-generate alone adds a language model's scores, and "
            f"{tool or 'the hub'} would translate without it: translate with fairseq-generate, "
            "or drop --lm-path"
        )
    if generation.score_reference:
        raise ConfigurationError(
            "--lm-path with --score-reference: fairseq scores the references with the "
            "translation models alone: drop one of them"
        )
    if not weight:
        raise ConfigurationError(
            "--lm-path without --lm-weight: the language model's scores are weighed by "
            "--lm-weight, 0 unless given, which adds nothing: give it (--lm-weight 0.2, say)"
        )


def refuse_a_prefix_nothing_reads(generation) -> None:
    """--prefix-size N makes each translation begin with the first N tokens of its reference, which
    fairseq-generate alone reads, from its test set. fairseq-interactive's lines and the hub's
    sentences have no reference, and fairseq translated them as without the option, without a
    word (for any model: its lstm too)."""
    tool = running_fairseq_tool()
    if generation.prefix_size and tool != "fairseq-generate":
        raise ConfigurationError(
            f"--prefix-size {generation.prefix_size}: fairseq-generate alone begins each "
            "translation with the first tokens of its test set's reference, and "
            f"{tool or 'the hub'} has no reference and would translate without them: drop "
            "--prefix-size, or binarize the sources and their references as a test split for "
            "fairseq-generate"
        )


def refuse_a_soft_alignment_fairseq_interactive_cannot_print(generation) -> None:
    """fairseq-interactive prints an alignment as source-target pairs, a hard one: a soft one's
    row of weights per target token failed to unpack in a ValueError traceback at the first line
    of two words or more, the lines after it untranslated, and a line of one word had its two
    weights (the word's and the end of sentence's) printed as a pair, 0.485423-0.514577, without a
    word. fairseq's own, for any model (its lstm too)."""
    if generation.print_alignment == "soft" and running_fairseq_tool() == "fairseq-interactive":
        raise ConfigurationError(
            "--print-alignment soft: fairseq-interactive prints alignments as source-target "
            "pairs, hard ones, and fails on a soft one's weights: give --print-alignment (hard); "
            "for the weights, bahdanau-plot-alignment draws a sentence's soft alignment, and "
            "fairseq-generate --print-alignment soft prints a test set's"
        )


def refuse_retaining_a_dropout_of_none(generation, dropout: float) -> None:
    """--retain-dropout keeps the model's dropout (its configuration's rate, dropout) while it
    translates; a model trained without dropout (0, the paper's and the models' default) has none
    to keep, and fairseq translated as without the flag, the same hypotheses at every seed, without
    a word."""
    if generation.retain_dropout and not dropout:
        raise ConfigurationError(
            "--retain-dropout keeps the model's dropout while it translates, and its rate is 0 "
            "(trained without dropout, the paper's default): the translations would be those "
            """without it; give a rate with --model-overrides "{'dropout': 0.2}", or drop """
            "--retain-dropout"
        )


def warn_of_retained_modules_it_lacks(generation, dropout_modules: Iterable[str]) -> None:
    """--retain-dropout-modules keeps the dropout of the modules it names, by class (fairseq's
    FairseqDropout ``module_name``), and turns off every other's: naming none of this model's (a
    typo, another model's class) left it translating without dropout, said only in fairseq's INFO
    lines. A warning, not an error: in an ensemble the name may be another model's (lstm's)."""
    named, held = generation.retain_dropout_modules, sorted(set(dropout_modules))
    if generation.retain_dropout and named and not set(named) & set(held):
        logger.warning(
            "--retain-dropout-modules %s names none of this model's modules with dropout (%s): "
            "it translates without dropout; name %s to keep its dropout",
            " ".join(named),
            ", ".join(held),
            " or ".join(held),
        )


def batch_every_sentence(cfg) -> None:
    """fairseq-generate leaves out the last batch of the test set when its size is not a multiple
    of --required-batch-size-multiple (8 by default; fairseq issue #5036): up to 7 sentences
    missing from the output and from BLEU, without a word. Translating with these models, it
    batches with a multiple of 1, as fairseq-interactive and the hub always do; only the sizes of
    the batches change, not a translation. (fairseq-train never calls this: its batches stay
    fairseq's own.)"""
    dataset = getattr(cfg, "dataset", None)
    if dataset is not None:
        dataset.required_batch_size_multiple = 1
